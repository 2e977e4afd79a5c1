// Problems and templates: small identity rows that trials, bests and misses refer to.
#include <SQLiteCpp/SQLiteCpp.h>

#include "db/database.hpp"
#include "db/sql.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

int64_t Database::store_problem(const KernelProblem& problem) {
  sql::check_problem(problem);
  // DO UPDATE with a no-op assignment, not DO NOTHING: only then does RETURNING report the existing id.
  SQLite::Statement upsert(connection(), R"sql(
    INSERT INTO problems (dtype, c_dtype, a_trans, b_trans, m, n, k, align_a, align_b, align_c)
    VALUES (:dtype, :c_dtype, :a_trans, :b_trans, :m, :n, :k, :align_a, :align_b, :align_c)
    ON CONFLICT (dtype, c_dtype, a_trans, b_trans, m, n, k, align_a, align_b, align_c) DO UPDATE SET m = excluded.m
    RETURNING id
  )sql");
  sql::bind_problem(upsert, problem);
  upsert.executeStep();
  return upsert.getColumn(0).getInt64();
}

int64_t Database::upsert_problem(const KernelProblem& problem) {
  return sql::guarded(path_, "store a problem", [&] {
    WriteTransaction transaction(*this);
    const int64_t id = store_problem(problem);
    transaction.commit();
    return id;
  });
}

std::optional<int64_t> Database::find_problem(const KernelProblem& problem) const {
  return sql::guarded(path_, "look up a problem", [&]() -> std::optional<int64_t> {
    SQLite::Statement query(connection(), R"sql(
      SELECT id FROM problems
      WHERE dtype = :dtype AND c_dtype = :c_dtype AND a_trans = :a_trans AND b_trans = :b_trans AND m = :m AND n = :n AND k = :k
        AND align_a = :align_a AND align_b = :align_b AND align_c = :align_c
    )sql");
    sql::bind_problem(query, problem);
    if (!query.executeStep()) return std::nullopt;
    return query.getColumn(0).getInt64();
  });
}

int64_t Database::store_template(const std::string& name, const std::string& source_hash) {
  if (name.empty() || source_hash.empty()) {
    throw InvalidArgumentError("a template needs a name and a source hash to be stored");
  }
  SQLite::Statement upsert(connection(), R"sql(
    INSERT INTO templates (name, source_hash) VALUES (:name, :source_hash)
    ON CONFLICT (name, source_hash) DO UPDATE SET name = excluded.name
    RETURNING id
  )sql");
  upsert.bind(":name", name);
  upsert.bind(":source_hash", source_hash);
  upsert.executeStep();
  return upsert.getColumn(0).getInt64();
}

int64_t Database::upsert_template(const std::string& name, const std::string& source_hash) {
  return sql::guarded(path_, "store a template", [&] {
    WriteTransaction transaction(*this);
    const int64_t id = store_template(name, source_hash);
    transaction.commit();
    return id;
  });
}

}  // namespace gemmforge::db

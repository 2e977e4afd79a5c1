// Problems and templates: small identity rows that trials, bests and misses refer to.
#include <SQLiteCpp/SQLiteCpp.h>

#include "db/database.hpp"
#include "db/sql.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

// Plain inserts after a lookup, not upserts with RETURNING: SQLite gathers RETURNING rows in a temporary
// table it creates and drops per statement, which costs more than the lookup on an import's hot path.
constexpr const char* kInsertProblem = R"sql(
  INSERT INTO problems (dtype, c_dtype, a_trans, b_trans, m, n, k, align_a, align_b, align_c)
  VALUES (:dtype, :c_dtype, :a_trans, :b_trans, :m, :n, :k, :align_a, :align_b, :align_c)
)sql";

constexpr const char* kFindProblem = R"sql(
  SELECT id FROM problems
  WHERE dtype = :dtype AND c_dtype = :c_dtype AND a_trans = :a_trans AND b_trans = :b_trans AND m = :m
    AND n = :n AND k = :k
    AND align_a = :align_a AND align_b = :align_b AND align_c = :align_c
)sql";

constexpr const char* kFindTemplate = R"sql(
  SELECT id FROM templates WHERE name = :name AND source_hash = :source_hash
)sql";

constexpr const char* kInsertTemplate = R"sql(
  INSERT INTO templates (name, source_hash) VALUES (:name, :source_hash)
)sql";

}  // namespace

int64_t Database::store_problem(const KernelProblem& problem) {
  check_kernel_problem(problem);
  {
    SQLite::Statement& find = cached(kFindProblem);
    sql::ResetOnExit done(find);
    sql::bind_problem(find, problem);
    if (find.executeStep()) return find.getColumn(0).getInt64();
  }
  SQLite::Statement& insert = cached(kInsertProblem);
  sql::ResetOnExit done(insert);
  sql::bind_problem(insert, problem);
  insert.exec();
  return connection().getLastInsertRowid();
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
    SQLite::Statement& query = cached(kFindProblem);
    sql::ResetOnExit done(query);
    sql::bind_problem(query, problem);
    if (!query.executeStep()) return std::nullopt;
    return query.getColumn(0).getInt64();
  });
}

int64_t Database::store_template(const std::string& name, const std::string& source_hash) {
  if (name.empty() || source_hash.empty()) {
    throw InvalidArgumentError("a template needs a name and a source hash to be stored");
  }
  {
    SQLite::Statement& find = cached(kFindTemplate);
    sql::ResetOnExit done(find);
    find.bind(":name", name);
    find.bind(":source_hash", source_hash);
    if (find.executeStep()) return find.getColumn(0).getInt64();
  }
  SQLite::Statement& insert = cached(kInsertTemplate);
  sql::ResetOnExit done(insert);
  insert.bind(":name", name);
  insert.bind(":source_hash", source_hash);
  insert.exec();
  return connection().getLastInsertRowid();
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

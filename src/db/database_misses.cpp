// Misses: problems the runtime served without a tuned config, counted so `gemmforge tune` knows what to do
// next.
#include <SQLiteCpp/SQLiteCpp.h>

#include "db/database.hpp"
#include "db/sql.hpp"

namespace gemmforge::db {

void Database::record_miss(int64_t device_id, const KernelProblem& problem) {
  sql::guarded(path_, "count a miss", [&] {
    WriteTransaction transaction(*this);
    const int64_t problem_id = store_problem(problem);
    SQLite::Statement upsert(connection(), R"sql(
      INSERT INTO misses (device_id, problem_id, count, first_seen, last_seen)
      VALUES (:device_id, :problem_id, 1, :now, :now)
      ON CONFLICT (device_id, problem_id) DO UPDATE SET count = count + 1, last_seen = excluded.last_seen
    )sql");
    upsert.bind(":device_id", device_id);
    upsert.bind(":problem_id", problem_id);
    upsert.bind(":now", sql::utc_now());
    upsert.exec();
    transaction.commit();
  });
}

std::vector<MissRecord> Database::misses(int64_t device_id) const {
  return sql::guarded(path_, "read misses", [&] {
    SQLite::Statement query(connection(), R"sql(
      SELECT ms.device_id AS device_id, ms.problem_id AS problem_id, ms.count AS count,
             ms.first_seen AS first_seen, ms.last_seen AS last_seen, p.dtype AS dtype, p.c_dtype AS c_dtype, p.a_trans AS a_trans,
             p.b_trans AS b_trans, p.m AS m, p.n AS n, p.k AS k, p.align_a AS align_a, p.align_b AS align_b,
             p.align_c AS align_c
      FROM misses ms JOIN problems p ON p.id = ms.problem_id
      WHERE ms.device_id = :device_id
      ORDER BY ms.count DESC, ms.problem_id
    )sql");
    query.bind(":device_id", device_id);
    std::vector<MissRecord> misses;
    while (query.executeStep()) {
      MissRecord miss;
      miss.device_id = query.getColumn("device_id").getInt64();
      miss.problem_id = query.getColumn("problem_id").getInt64();
      miss.problem = sql::read_problem(query);
      miss.count = query.getColumn("count").getInt64();
      miss.first_seen = query.getColumn("first_seen").getString();
      miss.last_seen = query.getColumn("last_seen").getString();
      misses.push_back(std::move(miss));
    }
    return misses;
  });
}

}  // namespace gemmforge::db

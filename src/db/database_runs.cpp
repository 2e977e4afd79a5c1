// Runs: one row per `gemmforge tune` invocation, so every trial can be traced to its command and clocks.
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include "db/database.hpp"
#include "db/sql.hpp"
#include "db/version.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

int64_t Database::begin_run(int64_t device_id, const std::string& command, const std::string& strategy,
                            RunClocks clocks) {
  return sql::guarded(path_, "record the start of a tuning run", [&] {
    WriteTransaction transaction(*this);
    SQLite::Statement insert(connection(), R"sql(
      INSERT INTO runs (device_id, started_at, command, gemmforge_version, clock_khz, memory_clock_khz, strategy)
      VALUES (:device_id, :now, :command, :version, :clock_khz, :memory_clock_khz, :strategy)
      RETURNING id
    )sql");
    insert.bind(":device_id", device_id);
    insert.bind(":now", sql::utc_now());
    insert.bind(":command", command);
    insert.bind(":version", gemmforge_version());
    insert.bind(":clock_khz", clocks.clock_khz);
    insert.bind(":memory_clock_khz", clocks.memory_clock_khz);
    insert.bind(":strategy", strategy);
    insert.executeStep();
    const int64_t id = insert.getColumn(0).getInt64();
    insert.reset();  // a RETURNING statement holds its write until it is reset; commit needs it done
    transaction.commit();
    return id;
  });
}

void Database::finish_run(int64_t run_id) {
  sql::guarded(path_, "record the end of a tuning run", [&] {
    WriteTransaction transaction(*this);
    SQLite::Statement update(connection(), "UPDATE runs SET finished_at = :now WHERE id = :id");
    update.bind(":now", sql::utc_now());
    update.bind(":id", run_id);
    if (update.exec() != 1)
      throw InvalidArgumentError(fmt::format("there is no tuning run with id {}", run_id));
    transaction.commit();
  });
}

std::vector<RunRecord> Database::runs(int64_t device_id) const {
  return sql::guarded(path_, "list tuning runs", [&] {
    SQLite::Statement query(connection(), "SELECT * FROM runs WHERE device_id = :device_id ORDER BY id");
    query.bind(":device_id", device_id);
    std::vector<RunRecord> runs;
    while (query.executeStep()) {
      RunRecord run;
      run.id = query.getColumn("id").getInt64();
      run.device_id = query.getColumn("device_id").getInt64();
      run.started_at = query.getColumn("started_at").getString();
      if (!query.getColumn("finished_at").isNull())
        run.finished_at = query.getColumn("finished_at").getString();
      run.command = query.getColumn("command").getString();
      run.gemmforge_version = query.getColumn("gemmforge_version").getString();
      run.clocks.clock_khz = query.getColumn("clock_khz").getInt();
      run.clocks.memory_clock_khz = query.getColumn("memory_clock_khz").getInt();
      run.strategy = query.getColumn("strategy").getString();
      runs.push_back(std::move(run));
    }
    return runs;
  });
}

}  // namespace gemmforge::db

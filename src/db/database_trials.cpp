// Trials and the best config per (device, problem): storing a measurement and electing the best in the
// same transaction, so a reader never sees a best that disagrees with the trials.
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <string>

#include "core/dtype.hpp"
#include "db/database.hpp"
#include "db/record_checks.hpp"
#include "db/sql.hpp"
#include "db/version.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

// Every trial query reads these columns. The LEFT JOIN on best marks the trial a problem serves.
constexpr const char* kSelectTrials = R"sql(
  SELECT t.id AS id, t.run_id AS run_id, t.device_id AS device_id, t.problem_id AS problem_id,
         p.dtype AS dtype, p.c_dtype AS c_dtype, p.a_trans AS a_trans, p.b_trans AS b_trans, p.m AS m, p.n AS n, p.k AS k,
         p.align_a AS align_a, p.align_b AS align_b, p.align_c AS align_c,
         tp.name AS template_name, tp.source_hash AS template_hash, t.config_key AS config_key,
         t.status AS status, t.reason AS reason, t.time_median_ms AS time_median_ms,
         t.time_min_ms AS time_min_ms, t.time_max_ms AS time_max_ms, t.repetitions AS repetitions,
         t.cublas_ms AS cublas_ms, t.tflops AS tflops, t.ratio_vs_cublas AS ratio_vs_cublas,
         t.registers AS registers, t.smem_bytes AS smem_bytes, t.spill_bytes AS spill_bytes,
         t.occupancy_blocks AS occupancy_blocks, t.occupancy_pct AS occupancy_pct, t.compile_ms AS compile_ms,
         t.rel_error AS rel_error, t.created_at AS created_at, t.gemmforge_version AS gemmforge_version,
         t.servable AS servable, d.uuid AS device_uuid, b.trial_id IS NOT NULL AS is_best
  FROM trials t
  JOIN problems p ON p.id = t.problem_id
  JOIN templates tp ON tp.id = t.template_id
  JOIN devices d ON d.id = t.device_id
  LEFT JOIN best b ON b.device_id = t.device_id AND b.problem_id = t.problem_id AND b.trial_id = t.id
)sql";

// A trial query: the common SELECT followed by the caller's WHERE and ORDER BY, constant SQL only.
std::string trial_query(const char* where_and_order) {
  return std::string(kSelectTrials) + where_and_order;
}

TrialRecord read_trial(const SQLite::Statement& row) {
  TrialRecord t;
  t.id = row.getColumn("id").getInt64();
  t.run_id = sql::optional_int64(row.getColumn("run_id"));
  t.device_id = row.getColumn("device_id").getInt64();
  t.problem_id = row.getColumn("problem_id").getInt64();
  t.problem = sql::read_problem(row);
  t.template_name = row.getColumn("template_name").getString();
  t.template_hash = row.getColumn("template_hash").getString();
  t.config_key = row.getColumn("config_key").getString();
  t.status =
      sql::parse_stored(row, "status", [](const std::string& text) { return parse_trial_status(text); });
  t.reason = row.getColumn("reason").getString();
  t.time_median_ms = sql::optional_double(row.getColumn("time_median_ms"));
  t.time_min_ms = sql::optional_double(row.getColumn("time_min_ms"));
  t.time_max_ms = sql::optional_double(row.getColumn("time_max_ms"));
  t.repetitions = sql::optional_int64(row.getColumn("repetitions"));
  t.cublas_ms = sql::optional_double(row.getColumn("cublas_ms"));
  t.tflops = sql::optional_double(row.getColumn("tflops"));
  t.ratio_vs_cublas = sql::optional_double(row.getColumn("ratio_vs_cublas"));
  t.registers = sql::optional_int64(row.getColumn("registers"));
  t.smem_bytes = sql::optional_int64(row.getColumn("smem_bytes"));
  t.spill_bytes = sql::optional_int64(row.getColumn("spill_bytes"));
  t.occupancy_blocks = sql::optional_int64(row.getColumn("occupancy_blocks"));
  t.occupancy_pct = sql::optional_double(row.getColumn("occupancy_pct"));
  t.compile_ms = sql::optional_double(row.getColumn("compile_ms"));
  t.rel_error = sql::optional_double(row.getColumn("rel_error"));
  t.created_at = row.getColumn("created_at").getString();
  t.gemmforge_version = row.getColumn("gemmforge_version").getString();
  t.servable = row.getColumn("servable").getInt() != 0;
  t.device_uuid = row.getColumn("device_uuid").getString();
  t.is_best = row.getColumn("is_best").getInt() != 0;
  // A stored value that breaks its meaning was not written by gemmforge: the file is damaged.
  if (const Fault fault = trial_fault(t)) {
    throw SQLite::Exception(fmt::format("trial {} ({} {} on {}): {}: {}", t.id, t.template_name, t.config_key,
                                        t.problem.to_string(), fault.field, fault.message),
                            SQLITE_CORRUPT);
  }
  return t;
}

std::vector<TrialRecord> read_trials(SQLite::Statement& query) {
  std::vector<TrialRecord> trials;
  while (query.executeStep()) trials.push_back(read_trial(query));
  return trials;
}

void check_trial(const TrialRecord& trial) {
  if (const Fault fault = trial_fault(trial)) {
    throw InvalidArgumentError(fmt::format("trial {} {} on {}: {}: {}", trial.template_name, trial.config_key,
                                           trial.problem.to_string(), fault.field, fault.message));
  }
}

struct CurrentBest {
  int64_t trial_id = 0;
  double time_median_ms = 0;
};

constexpr const char* kCurrentBest = R"sql(
  SELECT b.trial_id, t.time_median_ms FROM best b JOIN trials t ON t.id = b.trial_id
  WHERE b.device_id = :device_id AND b.problem_id = :problem_id
)sql";

// An upsert, not INSERT OR REPLACE: the row keeps its id, which `best` may point at.
constexpr const char* kUpsertTrial = R"sql(
  INSERT INTO trials (run_id, device_id, problem_id, template_id, config_key, status, reason, time_median_ms,
                      time_min_ms, time_max_ms, repetitions, cublas_ms, tflops, ratio_vs_cublas, registers,
                      smem_bytes, spill_bytes, occupancy_blocks, occupancy_pct, compile_ms, rel_error, created_at,
                      gemmforge_version, servable)
  VALUES (:run_id, :device_id, :problem_id, :template_id, :config_key, :status, :reason, :time_median_ms,
          :time_min_ms, :time_max_ms, :repetitions, :cublas_ms, :tflops, :ratio_vs_cublas, :registers,
          :smem_bytes, :spill_bytes, :occupancy_blocks, :occupancy_pct, :compile_ms, :rel_error, :created_at,
          :gemmforge_version, :servable)
  ON CONFLICT (device_id, problem_id, template_id, config_key) DO UPDATE SET
    run_id = excluded.run_id, status = excluded.status, reason = excluded.reason,
    time_median_ms = excluded.time_median_ms, time_min_ms = excluded.time_min_ms,
    time_max_ms = excluded.time_max_ms, repetitions = excluded.repetitions, cublas_ms = excluded.cublas_ms,
    tflops = excluded.tflops, ratio_vs_cublas = excluded.ratio_vs_cublas, registers = excluded.registers,
    smem_bytes = excluded.smem_bytes, spill_bytes = excluded.spill_bytes,
    occupancy_blocks = excluded.occupancy_blocks, occupancy_pct = excluded.occupancy_pct,
    compile_ms = excluded.compile_ms, rel_error = excluded.rel_error, created_at = excluded.created_at,
    gemmforge_version = excluded.gemmforge_version, servable = excluded.servable
)sql";

// The id after the upsert, by the unique key (RETURNING would cost a temporary table per statement).
constexpr const char* kTrialId = R"sql(
  SELECT id FROM trials
  WHERE device_id = :device_id AND problem_id = :problem_id AND template_id = :template_id
    AND config_key = :config_key
)sql";

constexpr const char* kUpsertBest = R"sql(
  INSERT INTO best (device_id, problem_id, trial_id) VALUES (:device_id, :problem_id, :trial_id)
  ON CONFLICT (device_id, problem_id) DO UPDATE SET trial_id = excluded.trial_id
)sql";

constexpr const char* kFastestServable = R"sql(
  SELECT id FROM trials
  WHERE device_id = :device_id AND problem_id = :problem_id AND status = 'ok' AND servable = 1
    AND time_median_ms IS NOT NULL AND template_id NOT IN (SELECT id FROM templates WHERE name = :vendor)
  ORDER BY time_median_ms, id LIMIT 1
)sql";

constexpr const char* kTrialIdByTemplate = R"sql(
  SELECT t.id FROM trials t JOIN templates tp ON tp.id = t.template_id
  WHERE t.device_id = :device_id AND t.problem_id = :problem_id AND tp.name = :name AND tp.source_hash = :hash
    AND t.config_key = :config_key
)sql";

// Deterministic orders: by problem, ok trials fastest first, the rest after; ties and failures by template,
// source and config, never by row id, so that equal contents list equally.
constexpr const char* kTrialOrder = R"sql(
  ORDER BY p.dtype, p.a_trans, p.b_trans, p.m, p.n, p.k, p.align_a, p.align_b, p.align_c,
           t.status <> 'ok', CASE WHEN t.status = 'ok' THEN t.time_median_ms END, tp.name, tp.source_hash,
           t.config_key
)sql";

void store_trial_row(SQLite::Statement& upsert, const TrialRecord& trial, int64_t problem_id,
                     int64_t template_id) {
  sql::bind_optional(upsert, ":run_id", trial.run_id);
  upsert.bind(":device_id", trial.device_id);
  upsert.bind(":problem_id", problem_id);
  upsert.bind(":template_id", template_id);
  upsert.bind(":config_key", trial.config_key);
  upsert.bind(":status", to_string(trial.status));
  upsert.bind(":reason", trial.reason);
  sql::bind_optional(upsert, ":time_median_ms", trial.time_median_ms);
  sql::bind_optional(upsert, ":time_min_ms", trial.time_min_ms);
  sql::bind_optional(upsert, ":time_max_ms", trial.time_max_ms);
  sql::bind_optional(upsert, ":repetitions", trial.repetitions);
  sql::bind_optional(upsert, ":cublas_ms", trial.cublas_ms);
  sql::bind_optional(upsert, ":tflops", trial.tflops);
  sql::bind_optional(upsert, ":ratio_vs_cublas", trial.ratio_vs_cublas);
  sql::bind_optional(upsert, ":registers", trial.registers);
  sql::bind_optional(upsert, ":smem_bytes", trial.smem_bytes);
  sql::bind_optional(upsert, ":spill_bytes", trial.spill_bytes);
  sql::bind_optional(upsert, ":occupancy_blocks", trial.occupancy_blocks);
  sql::bind_optional(upsert, ":occupancy_pct", trial.occupancy_pct);
  sql::bind_optional(upsert, ":compile_ms", trial.compile_ms);
  sql::bind_optional(upsert, ":rel_error", trial.rel_error);
  upsert.bind(":created_at", trial.created_at.empty() ? sql::utc_now() : trial.created_at);
  upsert.bind(":gemmforge_version",
              trial.gemmforge_version.empty() ? std::string(gemmforge_version()) : trial.gemmforge_version);
  upsert.bind(":servable", trial.servable ? 1 : 0);
  upsert.exec();
}

}  // namespace

void Database::store_best(const BestRecord& best) {
  SQLite::Statement& upsert = cached(kUpsertBest);
  sql::ResetOnExit done(upsert);
  upsert.bind(":device_id", best.device_id);
  upsert.bind(":problem_id", best.problem_id);
  upsert.bind(":trial_id", best.trial_id);
  upsert.exec();
}

void Database::elect_fastest(int64_t device_id, int64_t problem_id) {
  SQLite::Statement& fastest = cached(kFastestServable);
  std::optional<int64_t> found;
  {
    sql::ResetOnExit done(fastest);
    fastest.bind(":device_id", device_id);
    fastest.bind(":problem_id", problem_id);
    fastest.bind(":vendor", kVendorTemplate);
    if (fastest.executeStep()) found = fastest.getColumn(0).getInt64();
  }
  if (found) {
    store_best({device_id, problem_id, *found});
    return;
  }
  SQLite::Statement remove(connection(),
                           "DELETE FROM best WHERE device_id = :device_id AND problem_id = :problem_id");
  remove.bind(":device_id", device_id);
  remove.bind(":problem_id", problem_id);
  remove.exec();
}

int64_t Database::record_trial(const TrialRecord& trial, BestUpdate update) {
  check_trial(trial);
  return sql::guarded(path_, "store a trial", [&] {
    WriteTransaction transaction(*this);
    const int64_t problem_id = store_problem(trial.problem);
    const int64_t template_id = store_template(trial.template_name, trial.template_hash);
    // Read before the upsert: the upsert may overwrite the best trial's own time.
    std::optional<CurrentBest> previous;
    {
      SQLite::Statement& query = cached(kCurrentBest);
      sql::ResetOnExit done(query);
      query.bind(":device_id", trial.device_id);
      query.bind(":problem_id", problem_id);
      if (query.executeStep())
        previous = CurrentBest{query.getColumn(0).getInt64(), query.getColumn(1).getDouble()};
    }
    {
      SQLite::Statement& upsert = cached(kUpsertTrial);
      sql::ResetOnExit done(upsert);
      store_trial_row(upsert, trial, problem_id, template_id);
    }
    int64_t id = 0;
    {
      SQLite::Statement& query = cached(kTrialId);
      sql::ResetOnExit done(query);
      query.bind(":device_id", trial.device_id);
      query.bind(":problem_id", problem_id);
      query.bind(":template_id", template_id);
      query.bind(":config_key", trial.config_key);
      query.executeStep();
      id = query.getColumn(0).getInt64();
    }
    if (trial.template_name == kVendorTemplate) {  // a yardstick, never served from the best table
      transaction.commit();
      return id;
    }
    const bool ok = trial.status == TrialStatus::kOk && trial.servable;
    const BestRecord mine{trial.device_id, problem_id, id};
    if (previous && previous->trial_id == id) {
      // The best trial itself was re-measured: a failure or (when speed decides) a slower time hands the
      // title to the fastest remaining ok trial, which may still be this one.
      if (!ok || update == BestUpdate::kIfFaster) elect_fastest(trial.device_id, problem_id);
    } else if (ok && update != BestUpdate::kNever) {
      const bool wins = !previous || update == BestUpdate::kAlways ||
                        (update == BestUpdate::kIfFaster && *trial.time_median_ms < previous->time_median_ms);
      if (wins) store_best(mine);
    }
    transaction.commit();
    return id;
  });
}

void Database::set_best(const BestRecord& best) {
  sql::guarded(path_, "set a best config", [&] {
    WriteTransaction transaction(*this);
    SQLite::Statement query(connection(), R"sql(
      SELECT status FROM trials WHERE id = :trial_id AND device_id = :device_id AND problem_id = :problem_id
    )sql");
    query.bind(":trial_id", best.trial_id);
    query.bind(":device_id", best.device_id);
    query.bind(":problem_id", best.problem_id);
    if (!query.executeStep()) {
      throw InvalidArgumentError(fmt::format("trial {} is not a trial of problem {} on device {}",
                                             best.trial_id, best.problem_id, best.device_id));
    }
    const std::string status = query.getColumn(0).getString();
    query.reset();
    if (status != to_string(TrialStatus::kOk)) {
      throw InvalidArgumentError(
          fmt::format("trial {} has status '{}'; only an ok trial can be the best", best.trial_id, status));
    }
    store_best(best);
    transaction.commit();
  });
}

std::vector<TrialRecord> Database::trials(int64_t device_id, int64_t problem_id) const {
  return sql::guarded(path_, "read trials", [&] {
    // Ok trials fastest first, then the others in the order they were recorded.
    SQLite::Statement query(connection(), trial_query(R"sql(
      WHERE t.device_id = :device_id AND t.problem_id = :problem_id
      ORDER BY t.status <> 'ok', CASE WHEN t.status = 'ok' THEN t.time_median_ms END, t.id
    )sql"));
    query.bind(":device_id", device_id);
    query.bind(":problem_id", problem_id);
    return read_trials(query);
  });
}

std::vector<TrialRecord> Database::trials(int64_t device_id) const {
  return sql::guarded(path_, "read trials", [&] {
    SQLite::Statement query(connection(), trial_query(R"sql(
      WHERE t.device_id = :device_id
      ORDER BY p.dtype, p.c_dtype, p.a_trans, p.b_trans, p.m, p.n, p.k, p.align_a, p.align_b, p.align_c,
               t.status <> 'ok', CASE WHEN t.status = 'ok' THEN t.time_median_ms END, t.id
    )sql"));
    query.bind(":device_id", device_id);
    return read_trials(query);
  });
}

bool Database::has_trial(int64_t device_id, int64_t problem_id, const std::string& template_hash,
                         const std::string& config_key) const {
  return sql::guarded(path_, "look up a trial", [&] {
    SQLite::Statement query(connection(), R"sql(
      SELECT 1 FROM trials t JOIN templates tp ON tp.id = t.template_id
      WHERE t.device_id = :device_id AND t.problem_id = :problem_id AND tp.source_hash = :hash
        AND t.config_key = :config_key
      LIMIT 1
    )sql");
    query.bind(":device_id", device_id);
    query.bind(":problem_id", problem_id);
    query.bind(":hash", template_hash);
    query.bind(":config_key", config_key);
    return query.executeStep();
  });
}

std::optional<TrialRecord> Database::best(int64_t device_id, int64_t problem_id) const {
  return sql::guarded(path_, "read a best config", [&]() -> std::optional<TrialRecord> {
    SQLite::Statement query(connection(), trial_query(R"sql(
      WHERE b.trial_id IS NOT NULL AND t.device_id = :device_id AND t.problem_id = :problem_id
    )sql"));
    query.bind(":device_id", device_id);
    query.bind(":problem_id", problem_id);
    if (!query.executeStep()) return std::nullopt;
    return read_trial(query);
  });
}

std::vector<TrialRecord> Database::best_for_device(int64_t device_id) const {
  return sql::guarded(path_, "read best configs", [&] {
    SQLite::Statement query(connection(), trial_query(R"sql(
      WHERE b.trial_id IS NOT NULL AND t.device_id = :device_id
      ORDER BY p.dtype, p.c_dtype, p.a_trans, p.b_trans, p.m, p.n, p.k, p.align_a, p.align_b, p.align_c
    )sql"));
    query.bind(":device_id", device_id);
    return read_trials(query);
  });
}

std::vector<TrialRecord> Database::best_for_model(const std::string& device_name) const {
  return sql::guarded(path_, "read best configs of a GPU model", [&] {
    SQLite::Statement query(connection(), trial_query(R"sql(
      WHERE b.trial_id IS NOT NULL AND d.name = :name COLLATE NOCASE
      ORDER BY t.device_id, p.dtype, p.c_dtype, p.a_trans, p.b_trans, p.m, p.n, p.k, p.align_a, p.align_b, p.align_c
    )sql"));
    query.bind(":name", device_name);
    return read_trials(query);
  });
}

std::vector<TrialRecord> Database::top_trials(int64_t device_id, int64_t problem_id, int k) const {
  if (k <= 0) return {};
  return sql::guarded(path_, "read the fastest trials", [&] {
    SQLite::Statement query(connection(), trial_query(R"sql(
      WHERE t.device_id = :device_id AND t.problem_id = :problem_id AND t.status = 'ok'
        AND t.time_median_ms IS NOT NULL
      ORDER BY t.time_median_ms, t.id
      LIMIT :k
    )sql"));
    query.bind(":device_id", device_id);
    query.bind(":problem_id", problem_id);
    query.bind(":k", k);
    return read_trials(query);
  });
}

void Database::for_each_trial(int64_t device_id, bool best_only,
                              const std::function<void(const TrialRecord&)>& visit) const {
  sql::guarded(path_, "read trials", [&] {
    SQLite::Statement query(connection(),
                            std::string(kSelectTrials) +
                                (best_only ? "WHERE b.trial_id IS NOT NULL AND t.device_id = :device_id"
                                           : "WHERE t.device_id = :device_id") +
                                kTrialOrder);
    query.bind(":device_id", device_id);
    while (query.executeStep()) visit(read_trial(query));
  });
}

int64_t Database::count_trials(int64_t device_id, bool best_only) const {
  return sql::guarded(path_, "count trials", [&] {
    SQLite::Statement query(connection(), best_only
                                              ? "SELECT count(*) FROM best WHERE device_id = :device_id"
                                              : "SELECT count(*) FROM trials WHERE device_id = :device_id");
    query.bind(":device_id", device_id);
    query.executeStep();
    return query.getColumn(0).getInt64();
  });
}

// The trials whose cuBLAS time counts (counts_cublas_time): ok, timed, with a positive cuBLAS time.
constexpr const char* kFastestCublas = R"sql(
  SELECT p.dtype AS dtype, p.c_dtype AS c_dtype, p.a_trans AS a_trans, p.b_trans AS b_trans, p.m AS m,
         p.n AS n, p.k AS k, p.align_a AS align_a, p.align_b AS align_b, p.align_c AS align_c,
         min(t.cublas_ms) AS cublas_ms
  FROM trials t JOIN problems p ON p.id = t.problem_id
  WHERE t.device_id = :device_id AND t.status = 'ok' AND t.time_median_ms IS NOT NULL AND t.cublas_ms > 0
)sql";

void Database::for_each_fastest_cublas(int64_t device_id,
                                       const std::function<void(const KernelProblem&, double)>& visit) const {
  sql::guarded(path_, "read cuBLAS times", [&] {
    SQLite::Statement query(connection(), std::string(kFastestCublas) + R"sql(
      GROUP BY t.problem_id
      ORDER BY p.dtype, p.a_trans, p.b_trans, p.m, p.n, p.k, p.align_a, p.align_b, p.align_c, p.c_dtype
    )sql");
    query.bind(":device_id", device_id);
    while (query.executeStep()) visit(sql::read_problem(query), query.getColumn("cublas_ms").getDouble());
  });
}

std::optional<double> Database::fastest_cublas_ms(int64_t device_id, int64_t problem_id) const {
  return sql::guarded(path_, "read cuBLAS times", [&] {
    SQLite::Statement query(connection(), std::string(kFastestCublas) + " AND t.problem_id = :problem_id");
    query.bind(":device_id", device_id);
    query.bind(":problem_id", problem_id);
    query.executeStep();
    return sql::optional_double(query.getColumn("cublas_ms"));
  });
}

std::optional<TrialRecord> Database::find_trial(int64_t device_id, const KernelProblem& problem,
                                                const std::string& template_name,
                                                const std::string& template_hash,
                                                const std::string& config_key) const {
  return sql::guarded(path_, "look up a trial", [&]() -> std::optional<TrialRecord> {
    const std::optional<int64_t> problem_id = find_problem(problem);
    if (!problem_id) return std::nullopt;
    SQLite::Statement query(connection(), trial_query(R"sql(
      WHERE t.device_id = :device_id AND t.problem_id = :problem_id AND tp.name = :name
        AND tp.source_hash = :hash AND t.config_key = :config_key
    )sql"));
    query.bind(":device_id", device_id);
    query.bind(":problem_id", *problem_id);
    query.bind(":name", template_name);
    query.bind(":hash", template_hash);
    query.bind(":config_key", config_key);
    if (!query.executeStep()) return std::nullopt;
    return read_trial(query);
  });
}

std::optional<int64_t> Database::trial_id(int64_t device_id, const KernelProblem& problem,
                                          const std::string& template_name, const std::string& template_hash,
                                          const std::string& config_key) const {
  return sql::guarded(path_, "look up a trial", [&]() -> std::optional<int64_t> {
    const std::optional<int64_t> problem_id = find_problem(problem);
    if (!problem_id) return std::nullopt;
    SQLite::Statement& query = cached(kTrialIdByTemplate);
    sql::ResetOnExit done(query);
    query.bind(":device_id", device_id);
    query.bind(":problem_id", *problem_id);
    query.bind(":name", template_name);
    query.bind(":hash", template_hash);
    query.bind(":config_key", config_key);
    if (!query.executeStep()) return std::nullopt;
    return query.getColumn(0).getInt64();
  });
}

std::optional<double> Database::best_time_ms(int64_t device_id, const KernelProblem& problem) const {
  return sql::guarded(path_, "read a best time", [&]() -> std::optional<double> {
    const std::optional<int64_t> problem_id = find_problem(problem);
    if (!problem_id) return std::nullopt;
    SQLite::Statement& query = cached(kCurrentBest);
    sql::ResetOnExit done(query);
    query.bind(":device_id", device_id);
    query.bind(":problem_id", *problem_id);
    if (!query.executeStep()) return std::nullopt;
    return query.getColumn(1).getDouble();
  });
}

void Database::elect_verified_bests(double error_bound) {
  // Each problem's types verify to their own tolerance (verified_error_bound): a table of the bounds.
  std::string bounds;
  for (const auto& [input, output] : type_pairs()) {
    bounds += fmt::format("{}('{}', '{}', {:.17g})", bounds.empty() ? "" : ", ", dtype_facts(input).name,
                          dtype_facts(output).name, verified_error_bound(input, output, error_bound));
  }
  sql::guarded(path_, "elect the best configs", [&] {
    WriteTransaction transaction(*this);
    connection().exec("DELETE FROM best");
    SQLite::Statement elect(connection(), fmt::format(R"sql(
      WITH bounds (dtype, c_dtype, bound) AS (VALUES {})
      INSERT INTO best (device_id, problem_id, trial_id)
      SELECT device_id, problem_id, id FROM (
        SELECT t.device_id AS device_id, t.problem_id AS problem_id, t.id AS id,
               row_number() OVER (PARTITION BY t.device_id, t.problem_id
                                  ORDER BY t.time_median_ms, tp.name, t.config_key, tp.source_hash) AS rank
        FROM trials t JOIN templates tp ON tp.id = t.template_id
          JOIN problems p ON p.id = t.problem_id
          JOIN bounds b ON b.dtype = p.dtype AND b.c_dtype = p.c_dtype
        WHERE t.status = 'ok' AND t.servable = 1 AND t.time_median_ms IS NOT NULL AND t.rel_error IS NOT NULL
          AND t.rel_error <= b.bound)
      WHERE rank = 1
    )sql",
                                                      bounds));
    elect.exec();
    transaction.commit();
  });
}

}  // namespace gemmforge::db

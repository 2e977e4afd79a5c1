// Compiled kernels kept across processes, so a problem served before needs no NVRTC call.
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "db/database.hpp"
#include "db/sql.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

void Database::put_cubin(const CubinRecord& record) {
  if (record.key.empty()) throw InvalidArgumentError("a cubin needs a non-empty cache key to be stored");
  sql::guarded(path_, "store a cubin", [&] {
    WriteTransaction transaction(*this);
    // Nothing refers to a cubin row, so replacing it whole is safe.
    SQLite::Statement insert(connection(), R"sql(
      INSERT OR REPLACE INTO cubins (key, template_name, template_hash, arch, nvrtc_version, options, config_key,
                                     cubin, log, registers, spill_bytes, static_smem_bytes, compile_ms, created_at)
      VALUES (:key, :template_name, :template_hash, :arch, :nvrtc_version, :options, :config_key, :cubin, :log,
              :registers, :spill_bytes, :static_smem_bytes, :compile_ms, :created_at)
    )sql");
    insert.bind(":key", record.key);
    insert.bind(":template_name", record.template_name);
    insert.bind(":template_hash", record.template_hash);
    insert.bind(":arch", record.arch);
    insert.bind(":nvrtc_version", record.nvrtc_version);
    insert.bind(":options", nlohmann::json(record.options).dump());
    insert.bind(":config_key", record.config_key);
    // A null pointer would bind SQL NULL; an empty cubin is a zero-length blob.
    static const char kEmpty = 0;
    insert.bind(":cubin", record.cubin.empty() ? &kEmpty : record.cubin.data(),
                static_cast<int>(record.cubin.size()));
    insert.bind(":log", record.log);
    sql::bind_optional(insert, ":registers", record.registers);
    sql::bind_optional(insert, ":spill_bytes", record.spill_bytes);
    sql::bind_optional(insert, ":static_smem_bytes", record.static_smem_bytes);
    sql::bind_optional(insert, ":compile_ms", record.compile_ms);
    insert.bind(":created_at", sql::utc_now());
    insert.exec();
    transaction.commit();
  });
}

std::optional<CubinRecord> Database::get_cubin(const std::string& key) const {
  return sql::guarded(path_, "read a cubin", [&]() -> std::optional<CubinRecord> {
    SQLite::Statement query(connection(), "SELECT * FROM cubins WHERE key = :key");
    query.bind(":key", key);
    if (!query.executeStep()) return std::nullopt;
    CubinRecord record;
    record.key = query.getColumn("key").getString();
    record.template_name = query.getColumn("template_name").getString();
    record.template_hash = query.getColumn("template_hash").getString();
    record.arch = query.getColumn("arch").getString();
    record.nvrtc_version = query.getColumn("nvrtc_version").getString();
    const nlohmann::json options =
        nlohmann::json::parse(query.getColumn("options").getString(), nullptr, false);
    if (!options.is_array()) {
      throw DatabaseError(
          fmt::format("{}: the options of cubin '{}' are not a JSON array; the file is damaged, "
                      "delete the row or move the file away",
                      path_, key));
    }
    for (const auto& option : options)
      record.options.push_back(option.is_string() ? option.get<std::string>() : "");
    record.config_key = query.getColumn("config_key").getString();
    const SQLite::Column cubin = query.getColumn("cubin");
    const auto* bytes = static_cast<const char*>(cubin.getBlob());
    record.cubin.assign(bytes, bytes + cubin.getBytes());
    record.log = query.getColumn("log").getString();
    record.registers = sql::optional_int64(query.getColumn("registers"));
    record.spill_bytes = sql::optional_int64(query.getColumn("spill_bytes"));
    record.static_smem_bytes = sql::optional_int64(query.getColumn("static_smem_bytes"));
    record.compile_ms = sql::optional_double(query.getColumn("compile_ms"));
    record.created_at = query.getColumn("created_at").getString();
    return record;
  });
}

}  // namespace gemmforge::db

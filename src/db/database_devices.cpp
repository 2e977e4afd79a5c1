// Devices: stored by UUID (or "model:<name>"), refreshed every time a process sees them, found by uuid or
// name.
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include "db/database.hpp"
#include "db/record_checks.hpp"
#include "db/sql.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

DeviceRecord read_device(const SQLite::Statement& row) {
  DeviceRecord record;
  record.id = row.getColumn("id").getInt64();
  DeviceInfo& d = record.info;
  d.name = row.getColumn("name").getString();
  d.uuid = row.getColumn("uuid").getString();
  d.pci_bus_id = row.getColumn("pci_bus_id").getString();
  d.cc_major = row.getColumn("cc_major").getInt();
  d.cc_minor = row.getColumn("cc_minor").getInt();
  d.sm_count = row.getColumn("sm_count").getInt();
  d.total_memory = row.getColumn("memory_bytes").getInt64();
  d.smem_per_block = row.getColumn("smem_per_block").getInt();
  d.smem_per_block_optin = row.getColumn("smem_per_block_optin").getInt();
  d.smem_per_sm = row.getColumn("smem_per_sm").getInt();
  d.regs_per_block = row.getColumn("regs_per_block").getInt();
  d.regs_per_sm = row.getColumn("regs_per_sm").getInt();
  d.max_threads_per_block = row.getColumn("max_threads_per_block").getInt();
  d.max_threads_per_sm = row.getColumn("max_threads_per_sm").getInt();
  d.max_blocks_per_sm = row.getColumn("max_blocks_per_sm").getInt();
  d.warp_size = row.getColumn("warp_size").getInt();
  d.l2_bytes = row.getColumn("l2_bytes").getInt();
  d.clock_khz = row.getColumn("clock_khz").getInt();
  d.memory_clock_khz = row.getColumn("memory_clock_khz").getInt();
  d.memory_bus_width = row.getColumn("memory_bus_width").getInt();
  d.driver_version = row.getColumn("driver_version").getInt();
  d.runtime_version = row.getColumn("runtime_version").getInt();
  d.nvrtc_version = row.getColumn("nvrtc_version").getString();
  record.first_seen = row.getColumn("first_seen").getString();
  record.last_seen = row.getColumn("last_seen").getString();
  // A stored value that breaks its meaning was not written by gemmforge: the file is damaged.
  Fault fault = device_fault(d);
  if (!fault && !is_timestamp(record.first_seen)) fault = {"first_seen", "is not a UTC time"};
  if (!fault && !is_timestamp(record.last_seen)) fault = {"last_seen", "is not a UTC time"};
  if (fault) {
    throw SQLite::Exception(
        fmt::format("device {} ({}): {}: {}", record.id, d.name, fault.field, fault.message), SQLITE_CORRUPT);
  }
  return record;
}

std::vector<DeviceRecord> read_devices(SQLite::Statement& query) {
  std::vector<DeviceRecord> records;
  while (query.executeStep()) records.push_back(read_device(query));
  return records;
}

}  // namespace

int64_t Database::store_device(const DeviceInfo& d, const std::string& first_seen,
                               const std::string& last_seen) {
  DeviceInfo keyed = d;
  keyed.uuid = device_key(d);
  if (const Fault fault = device_fault(keyed)) {
    throw InvalidArgumentError(
        fmt::format("device '{}' cannot be stored: {}: {}", d.name, fault.field, fault.message));
  }
  // Everything but first_seen is refreshed: clocks, driver and NVRTC change with the machine's software.
  SQLite::Statement upsert(connection(), R"sql(
    INSERT INTO devices (name, uuid, pci_bus_id, cc_major, cc_minor, sm_count, memory_bytes, smem_per_block,
                         smem_per_block_optin, smem_per_sm, regs_per_block, regs_per_sm, max_threads_per_block,
                         max_threads_per_sm, max_blocks_per_sm, warp_size, l2_bytes, clock_khz, memory_clock_khz,
                         memory_bus_width, driver_version, runtime_version, nvrtc_version, first_seen, last_seen)
    VALUES (:name, :uuid, :pci_bus_id, :cc_major, :cc_minor, :sm_count, :memory_bytes, :smem_per_block,
            :smem_per_block_optin, :smem_per_sm, :regs_per_block, :regs_per_sm, :max_threads_per_block,
            :max_threads_per_sm, :max_blocks_per_sm, :warp_size, :l2_bytes, :clock_khz, :memory_clock_khz,
            :memory_bus_width, :driver_version, :runtime_version, :nvrtc_version, :first_seen, :last_seen)
    ON CONFLICT (uuid) DO UPDATE SET
      name = excluded.name, pci_bus_id = excluded.pci_bus_id, cc_major = excluded.cc_major,
      cc_minor = excluded.cc_minor, sm_count = excluded.sm_count, memory_bytes = excluded.memory_bytes,
      smem_per_block = excluded.smem_per_block, smem_per_block_optin = excluded.smem_per_block_optin,
      smem_per_sm = excluded.smem_per_sm, regs_per_block = excluded.regs_per_block,
      regs_per_sm = excluded.regs_per_sm, max_threads_per_block = excluded.max_threads_per_block,
      max_threads_per_sm = excluded.max_threads_per_sm, max_blocks_per_sm = excluded.max_blocks_per_sm,
      warp_size = excluded.warp_size, l2_bytes = excluded.l2_bytes, clock_khz = excluded.clock_khz,
      memory_clock_khz = excluded.memory_clock_khz, memory_bus_width = excluded.memory_bus_width,
      driver_version = excluded.driver_version, runtime_version = excluded.runtime_version,
      nvrtc_version = excluded.nvrtc_version, last_seen = excluded.last_seen,
      first_seen = min(first_seen, excluded.first_seen)
    RETURNING id
  )sql");
  upsert.bind(":name", d.name);
  upsert.bind(":uuid", device_key(d));
  upsert.bind(":pci_bus_id", d.pci_bus_id);
  upsert.bind(":cc_major", d.cc_major);
  upsert.bind(":cc_minor", d.cc_minor);
  upsert.bind(":sm_count", d.sm_count);
  upsert.bind(":memory_bytes", d.total_memory);
  upsert.bind(":smem_per_block", d.smem_per_block);
  upsert.bind(":smem_per_block_optin", d.smem_per_block_optin);
  upsert.bind(":smem_per_sm", d.smem_per_sm);
  upsert.bind(":regs_per_block", d.regs_per_block);
  upsert.bind(":regs_per_sm", d.regs_per_sm);
  upsert.bind(":max_threads_per_block", d.max_threads_per_block);
  upsert.bind(":max_threads_per_sm", d.max_threads_per_sm);
  upsert.bind(":max_blocks_per_sm", d.max_blocks_per_sm);
  upsert.bind(":warp_size", d.warp_size);
  upsert.bind(":l2_bytes", d.l2_bytes);
  upsert.bind(":clock_khz", d.clock_khz);
  upsert.bind(":memory_clock_khz", d.memory_clock_khz);
  upsert.bind(":memory_bus_width", d.memory_bus_width);
  upsert.bind(":driver_version", d.driver_version);
  upsert.bind(":runtime_version", d.runtime_version);
  upsert.bind(":nvrtc_version", d.nvrtc_version);
  const std::string now = first_seen.empty() || last_seen.empty() ? sql::utc_now() : std::string();
  upsert.bind(":first_seen", first_seen.empty() ? now : first_seen);
  upsert.bind(":last_seen", last_seen.empty() ? now : last_seen);
  upsert.executeStep();
  return upsert.getColumn(0).getInt64();
}

int64_t Database::upsert_device(const DeviceInfo& device) {
  return sql::guarded(path_, "store a device", [&] {
    WriteTransaction transaction(*this);
    const int64_t id = store_device(device);
    transaction.commit();
    return id;
  });
}

int64_t Database::store_device_record(const DeviceRecord& record) {
  if (!is_timestamp(record.first_seen) || !is_timestamp(record.last_seen)) {
    throw InvalidArgumentError(
        fmt::format("device '{}' has no valid first_seen and last_seen times", record.info.name));
  }
  return sql::guarded(path_, "store a device", [&] {
    WriteTransaction transaction(*this);
    const int64_t id = store_device(record.info, record.first_seen, record.last_seen);
    transaction.commit();
    return id;
  });
}

std::vector<DeviceRecord> Database::devices() const {
  return sql::guarded(path_, "list devices", [&] {
    SQLite::Statement query(connection(), "SELECT * FROM devices ORDER BY id");
    return read_devices(query);
  });
}

std::optional<DeviceRecord> Database::device_by_uuid(const std::string& uuid) const {
  return sql::guarded(path_, "look up a device", [&]() -> std::optional<DeviceRecord> {
    SQLite::Statement query(connection(), "SELECT * FROM devices WHERE uuid = :uuid");
    query.bind(":uuid", uuid);
    if (!query.executeStep()) return std::nullopt;
    return read_device(query);
  });
}

std::vector<DeviceRecord> Database::devices_matching(const std::string& text) const {
  if (text.empty()) return {};
  if (auto device = device_by_uuid(text)) return {*device};
  return sql::guarded(path_, "look up devices by name", [&] {
    SQLite::Statement same_name(connection(),
                                "SELECT * FROM devices WHERE name = :text COLLATE NOCASE ORDER BY id");
    same_name.bind(":text", text);
    std::vector<DeviceRecord> found = read_devices(same_name);
    if (!found.empty()) return found;
    // instr, not LIKE: the user's text must not act as a pattern.
    SQLite::Statement containing(
        connection(), "SELECT * FROM devices WHERE instr(lower(name), lower(:text)) > 0 ORDER BY id");
    containing.bind(":text", text);
    return read_devices(containing);
  });
}

std::optional<DeviceRecord> Database::find_device(const std::string& uuid_or_name) const {
  std::vector<DeviceRecord> found = devices_matching(uuid_or_name);
  if (found.empty()) return std::nullopt;
  if (found.size() == 1) return std::move(found.front());
  std::string candidates;
  for (const DeviceRecord& device : found) {
    candidates +=
        fmt::format("{}{} ({})", candidates.empty() ? "" : ", ", device.info.name, device.info.uuid);
  }
  throw InvalidArgumentError(fmt::format("device '{}' is ambiguous: it matches {}; name one of them by uuid",
                                         uuid_or_name, candidates));
}

}  // namespace gemmforge::db

-- The gemmforge tuning database: every schema change, in order. This file is the one source of truth:
-- src/db embeds it at build time, splits it at the "-- migration N: ..." lines and applies, in one
-- transaction, the sections a database has not seen yet (recorded in schema_version).
--
-- Rules for editing:
--   * Never change a section that has been released; add "-- migration N+1: what it changes" at the end.
--   * Sections run with foreign keys off and are checked with PRAGMA foreign_key_check before commit,
--     so a section may rebuild a table (create new, copy, drop old, rename) as SQLite recommends.
--   * Timestamps are ISO-8601 UTC text with milliseconds ("2025-01-31T12:00:00.000Z").
--   * Status values are checked by the code (TrialStatus), not by a CHECK, so adding one needs no table
--     rebuild; it still needs a migration (even "SELECT 1;") so that older builds refuse the file rather
--     than meet a status they cannot read.

-- migration 1: initial schema

-- One row per applied migration; the database's version is the largest.
CREATE TABLE schema_version (
  version INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_at TEXT NOT NULL
);

-- GPUs seen by gemmforge or imported. uuid is nvidia-smi's "GPU-..." or "model:<name>" for a device
-- known only by its model (nominal limits, imports without a UUID).
CREATE TABLE devices (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  uuid TEXT NOT NULL UNIQUE,
  pci_bus_id TEXT NOT NULL DEFAULT '',
  cc_major INTEGER NOT NULL,
  cc_minor INTEGER NOT NULL,
  sm_count INTEGER NOT NULL,
  memory_bytes INTEGER NOT NULL,
  smem_per_block INTEGER NOT NULL,
  smem_per_block_optin INTEGER NOT NULL,
  smem_per_sm INTEGER NOT NULL,
  regs_per_block INTEGER NOT NULL,
  regs_per_sm INTEGER NOT NULL,
  max_threads_per_block INTEGER NOT NULL,
  max_threads_per_sm INTEGER NOT NULL,
  max_blocks_per_sm INTEGER NOT NULL,
  warp_size INTEGER NOT NULL,
  l2_bytes INTEGER NOT NULL,
  clock_khz INTEGER NOT NULL,
  memory_clock_khz INTEGER NOT NULL,
  memory_bus_width INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  runtime_version INTEGER NOT NULL,
  nvrtc_version TEXT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL
);
CREATE INDEX devices_by_name ON devices (name COLLATE NOCASE);

-- Canonical problems (see KernelProblem): the row-major form every kernel implements.
CREATE TABLE problems (
  id INTEGER PRIMARY KEY,
  dtype TEXT NOT NULL,
  a_trans INTEGER NOT NULL CHECK (a_trans IN (0, 1)),
  b_trans INTEGER NOT NULL CHECK (b_trans IN (0, 1)),
  m INTEGER NOT NULL CHECK (m >= 1),
  n INTEGER NOT NULL CHECK (n >= 1),
  k INTEGER NOT NULL CHECK (k >= 1),
  align_a INTEGER NOT NULL CHECK (align_a IN (1, 2, 4)),
  align_b INTEGER NOT NULL CHECK (align_b IN (1, 2, 4)),
  align_c INTEGER NOT NULL CHECK (align_c IN (1, 2, 4)),
  UNIQUE (dtype, a_trans, b_trans, m, n, k, align_a, align_b, align_c)
);

-- A template is identified by its name and the hash of everything that shapes its code; a changed
-- source is a new row, so measurements of old code are never mistaken for the new one.
CREATE TABLE templates (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  UNIQUE (name, source_hash)
);

-- One row per `gemmforge tune` invocation, with the clocks it ran at.
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices (id),
  started_at TEXT NOT NULL,
  finished_at TEXT,
  command TEXT NOT NULL,
  gemmforge_version TEXT NOT NULL,
  clock_khz INTEGER NOT NULL,
  memory_clock_khz INTEGER NOT NULL,
  strategy TEXT NOT NULL
);

-- Every measured (or failed) config. Re-measuring a config updates its row in place, keeping its id,
-- so the best table never points at a deleted row. run_id is NULL for imported results.
CREATE TABLE trials (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs (id),
  device_id INTEGER NOT NULL REFERENCES devices (id),
  problem_id INTEGER NOT NULL REFERENCES problems (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  config_key TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  time_median_ms REAL,
  time_min_ms REAL,
  time_max_ms REAL,
  repetitions INTEGER,
  cublas_ms REAL,
  tflops REAL,
  ratio_vs_cublas REAL,
  registers INTEGER,
  smem_bytes INTEGER,
  spill_bytes INTEGER,
  occupancy_blocks INTEGER,
  occupancy_pct REAL,
  compile_ms REAL,
  rel_error REAL,
  created_at TEXT NOT NULL,
  gemmforge_version TEXT NOT NULL,
  UNIQUE (device_id, problem_id, template_id, config_key)
);

-- The serving table: the trial the runtime launches for a problem on a device.
CREATE TABLE best (
  device_id INTEGER NOT NULL REFERENCES devices (id),
  problem_id INTEGER NOT NULL REFERENCES problems (id),
  trial_id INTEGER NOT NULL REFERENCES trials (id),
  PRIMARY KEY (device_id, problem_id)
);

-- Compiled kernels; key is the rtc cache key (template hash, parameters, arch, NVRTC version, options).
CREATE TABLE cubins (
  key TEXT PRIMARY KEY,
  template_name TEXT NOT NULL,
  template_hash TEXT NOT NULL,
  arch TEXT NOT NULL,
  nvrtc_version TEXT NOT NULL,
  options TEXT NOT NULL,
  config_key TEXT NOT NULL,
  cubin BLOB NOT NULL,
  log TEXT NOT NULL,
  registers INTEGER,
  spill_bytes INTEGER,
  static_smem_bytes INTEGER,
  compile_ms REAL,
  created_at TEXT NOT NULL
);

-- Problems the runtime served without a tuned config: the to-do list of the next `gemmforge tune`.
CREATE TABLE misses (
  device_id INTEGER NOT NULL REFERENCES devices (id),
  problem_id INTEGER NOT NULL REFERENCES problems (id),
  count INTEGER NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  PRIMARY KEY (device_id, problem_id)
);

-- migration 2: results kept but never served
-- An imported result measured with a template source this gemmforge does not know (its template_hash is
-- no built-in template's) proves nothing about the code this gemmforge would launch: it is kept for the
-- record with servable = 0 and never becomes the best of its problem.
ALTER TABLE trials ADD COLUMN servable INTEGER NOT NULL DEFAULT 1 CHECK (servable IN (0, 1));

-- migration 3: problems name C's type, and keep alignments in bytes
-- dtype is the type of A and B (and how they are multiplied: tf32), c_dtype the type of C, which may be f32
-- for 16-bit operands. Alignments are the widest aligned vector in bytes (up to 16), so that 16-bit operands
-- can state 8 elements; the rows stored so far, all of 4-byte elements, keep their meaning.
CREATE TABLE problems_v2 (
  id INTEGER PRIMARY KEY,
  dtype TEXT NOT NULL,
  c_dtype TEXT NOT NULL,
  a_trans INTEGER NOT NULL CHECK (a_trans IN (0, 1)),
  b_trans INTEGER NOT NULL CHECK (b_trans IN (0, 1)),
  m INTEGER NOT NULL CHECK (m >= 1),
  n INTEGER NOT NULL CHECK (n >= 1),
  k INTEGER NOT NULL CHECK (k >= 1),
  align_a INTEGER NOT NULL CHECK (align_a IN (1, 2, 4, 8, 16)),
  align_b INTEGER NOT NULL CHECK (align_b IN (1, 2, 4, 8, 16)),
  align_c INTEGER NOT NULL CHECK (align_c IN (1, 2, 4, 8, 16)),
  UNIQUE (dtype, c_dtype, a_trans, b_trans, m, n, k, align_a, align_b, align_c)
);
INSERT INTO problems_v2 (id, dtype, c_dtype, a_trans, b_trans, m, n, k, align_a, align_b, align_c)
  SELECT id, dtype, CASE WHEN dtype IN ('f16', 'bf16') THEN dtype ELSE 'f32' END, a_trans, b_trans, m, n, k,
         align_a * (CASE WHEN dtype IN ('f16', 'bf16') THEN 2 ELSE 4 END),
         align_b * (CASE WHEN dtype IN ('f16', 'bf16') THEN 2 ELSE 4 END),
         align_c * (CASE WHEN dtype IN ('f16', 'bf16') THEN 2 ELSE 4 END)
  FROM problems;
DROP TABLE problems;
ALTER TABLE problems_v2 RENAME TO problems;

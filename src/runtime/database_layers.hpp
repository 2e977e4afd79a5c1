// The tuning databases a process reads results from, in order, and the one it writes what it learns to
// (devices, problems served untuned, compiled kernels): the user's database, or a per-user one over it when
// it is read-only, over a site-wide read-only database.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "db/database.hpp"
#include "runtime/shared_database.hpp"

namespace gemmforge::runtime {

class DatabaseLayers {
 public:
  struct Options {
    /// The user's database; empty for db::Database::default_path().
    std::string database_path;
    /// A read-only database consulted last (a team's or a site's results); empty for $GEMMFORGE_SITE_DB,
    /// else none.
    std::string site_path;
    /// Whether a writable layer is wanted (serving records misses and cubins; `query` only reads).
    bool writable = true;
    /// Decides whether a file or folder may be written (tests inject one; default access(2)).
    db::WritableCheck writable_check;
  };

  /// Opens the layers. The user's database is opened read-only when its file or folder is not writable;
  /// what the process learns then goes to the per-user cache database (db::Database::cache_path()) when
  /// that is another file and can be written, else it is not recorded, which one warning says. A site
  /// database that cannot be read costs a warning, not the process. Throws DatabaseError when the user's
  /// database can neither be opened nor created.
  static DatabaseLayers open(const Options& options);

  /// In lookup order: the writable layer first (the user's own results), then read-only ones.
  const std::vector<SharedDatabase*>& lookup() const { return lookup_; }
  /// Where devices, misses and cubins are recorded; null when nothing can be.
  SharedDatabase* writable() const { return writable_; }
  /// The user's database path, as given or defaulted.
  const std::string& path() const { return path_; }
  /// "database /a.db (read-only: ...), then /site.db": what the fallback chain's answers name.
  const std::string& label() const { return label_; }

 private:
  std::vector<std::unique_ptr<SharedDatabase>> owned_;
  std::vector<SharedDatabase*> lookup_;
  SharedDatabase* writable_ = nullptr;
  std::string path_;
  std::string label_;
};

}  // namespace gemmforge::runtime

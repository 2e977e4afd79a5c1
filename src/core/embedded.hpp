// Files built into the library by cmake/embed_files.cmake: the kernel templates, the database schema and
// the shipped tuning results and cubins.
#pragma once

#include <cstddef>

namespace gemmforge::embedded {

struct File {
  const char* path;  ///< relative to the folder it was embedded from
  const unsigned char* data;
  const unsigned char* end;  ///< one past the last byte (a zero byte follows it)
  std::size_t size() const { return static_cast<std::size_t>(end - data); }
};

extern const File kTemplates[];  // templates/
extern const std::size_t kTemplatesCount;
extern const File kSchema[];  // db/schema.sql
extern const std::size_t kSchemaCount;
extern const File kTuned[];  // db/tuned/
extern const std::size_t kTunedCount;

}  // namespace gemmforge::embedded

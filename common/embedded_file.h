// A file of the source tree compiled into a binary (common/embed_files.sh writes the list).
#ifndef PARATUNE_COMMON_EMBEDDED_FILE_H_
#define PARATUNE_COMMON_EMBEDDED_FILE_H_

namespace paratune {

struct EmbeddedFile {
  const char* path;  // from the workspace root, e.g. "deploy/templates/megatron_llama.textproto"
  const char* text;
};

}  // namespace paratune

#endif  // PARATUNE_COMMON_EMBEDDED_FILE_H_

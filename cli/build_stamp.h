// The git commit a paratune binary was built from, stamped by Bazel: the genrule
// //cli:build_stamp_cc (stamp = 1) writes it from bazel-out/stable-status.txt, which
// scripts/workspace_status.sh fills (.bazelrc, --workspace_status_command). Linked into the
// paratune binary only, so that a new commit relinks that binary and no other target.
#ifndef PARATUNE_CLI_BUILD_STAMP_H_
#define PARATUNE_CLI_BUILD_STAMP_H_

namespace paratune {

// "69b826a1c2d3", with "-modified" when the tree differed from it; "unknown" outside a git
// checkout.
const char* BuildCommit();

}  // namespace paratune

#endif  // PARATUNE_CLI_BUILD_STAMP_H_

// Directory operations: REMOVE, RENAME, LINK, CREATE (NF4DIR, NF4LNK), READLINK,
// READDIR. RENAME and LINK work on the saved fh (source dir / file) and the current
// fh (target dir): PUTFH src; SAVEFH; PUTFH dst; RENAME.
#pragma once

#include <string>
#include <vector>

#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/nfs4/types.h"

namespace nfsshim::nfs4 {

int encode_remove(Compound& c, const std::string& name);
struct RemoveRes {
  uint32_t status = 0;
  ChangeInfo4 cinfo;
};
int decode_remove(ReplyReader& r, RemoveRes* out);

int encode_rename(Compound& c, const std::string& oldname, const std::string& newname);
struct RenameRes {
  uint32_t status = 0;
  ChangeInfo4 source_cinfo;
  ChangeInfo4 target_cinfo;
};
int decode_rename(ReplyReader& r, RenameRes* out);

int encode_link(Compound& c, const std::string& newname);
struct LinkRes {
  uint32_t status = 0;
  ChangeInfo4 cinfo;
};
int decode_link(ReplyReader& r, LinkRes* out);

// type NF4DIR or NF4LNK (link_target then holds the symlink's text).
struct CreateArgs {
  uint32_t type = 0;
  std::string name;
  std::string link_target;
  SetAttrs attrs;
};
int encode_create(Compound& c, const CreateArgs& a);
struct CreateRes {
  uint32_t status = 0;
  ChangeInfo4 cinfo;
  Bitmap4 attrset;
};
int decode_create(ReplyReader& r, const CreateArgs& sent, CreateRes* out);

int encode_readlink(Compound& c);
struct ReadlinkRes {
  uint32_t status = 0;
  std::string target;
};
int decode_readlink(ReplyReader& r, ReadlinkRes* out);

struct ReaddirArgs {
  uint64_t cookie = 0;
  Verifier4 cookieverf{};
  uint32_t dircount = 0;
  uint32_t maxcount = 0;
  Bitmap4 attrs;
};
struct DirEntry {
  uint64_t cookie = 0;
  std::string name;
  Fattr4 attrs;
};
struct ReaddirRes {
  uint32_t status = 0;
  Verifier4 cookieverf{};
  std::vector<DirEntry> entries;
  bool eof = false;
};
int encode_readdir(Compound& c, const ReaddirArgs& a);
// The entry list is an XDR linked list: decoded in a loop, never by recursion.
int decode_readdir(ReplyReader& r, const ReaddirArgs& sent, ReaddirRes* out);

}  // namespace nfsshim::nfs4

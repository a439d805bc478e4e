#include "nfsshim/nfs4/ops_dir.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {

int encode_remove(Compound& c, const std::string& name) {
  if (int rc = check_component(name); rc < 0) return c.fail(rc);
  c.begin_op(OP_REMOVE);
  c.enc().string(name);
  return 0;
}

int decode_remove(ReplyReader& r, RemoveRes* out) {
  if (r.next(OP_REMOVE, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  return get_change_info(r.dec(), &out->cinfo);
}

int encode_rename(Compound& c, const std::string& oldname, const std::string& newname) {
  if (int rc = check_component(oldname); rc < 0) return c.fail(rc);
  if (int rc = check_component(newname); rc < 0) return c.fail(rc);
  c.begin_op(OP_RENAME);
  c.enc().string(oldname);
  c.enc().string(newname);
  return 0;
}

int decode_rename(ReplyReader& r, RenameRes* out) {
  if (r.next(OP_RENAME, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  get_change_info(r.dec(), &out->source_cinfo);
  return get_change_info(r.dec(), &out->target_cinfo);
}

int encode_link(Compound& c, const std::string& newname) {
  if (int rc = check_component(newname); rc < 0) return c.fail(rc);
  c.begin_op(OP_LINK);
  c.enc().string(newname);
  return 0;
}

int decode_link(ReplyReader& r, LinkRes* out) {
  if (r.next(OP_LINK, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  return get_change_info(r.dec(), &out->cinfo);
}

int encode_create(Compound& c, const CreateArgs& a) {
  if (int rc = check_component(a.name); rc < 0) return c.fail(rc);
  if (a.type != NF4DIR && a.type != NF4LNK) return c.fail(-EINVAL);
  if (a.type == NF4LNK && (a.link_target.empty() || a.link_target.size() > kMaxStringBytes)) {
    return c.fail(a.link_target.empty() ? -ENOENT : -ENAMETOOLONG);
  }
  rpc::XdrEncoder attrs;
  if (int rc = put_fattr4(attrs, a.attrs); rc < 0) return c.fail(rc);
  c.begin_op(OP_CREATE);
  rpc::XdrEncoder& e = c.enc();
  e.u32(a.type);
  if (a.type == NF4LNK) e.string(a.link_target);
  e.string(a.name);
  e.fixed_opaque(attrs.data(), attrs.size());
  return 0;
}

int decode_create(ReplyReader& r, const CreateArgs& sent, CreateRes* out) {
  if (r.next(OP_CREATE, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  get_change_info(r.dec(), &out->cinfo);
  if (get_bitmap(r.dec(), &out->attrset) < 0) return -EBADMSG;
  if (!out->attrset.subset_of(setattrs_bitmap(sent.attrs))) {
    return r.dec().fail("CREATE set an attribute we did not send");
  }
  return 0;
}

int encode_readlink(Compound& c) {
  c.begin_op(OP_READLINK);
  return 0;
}

int decode_readlink(ReplyReader& r, ReadlinkRes* out) {
  if (r.next(OP_READLINK, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  return r.dec().string(&out->target, kMaxStringBytes);
}

int encode_readdir(Compound& c, const ReaddirArgs& a) {
  if (!bitmap_decodable(a.attrs) || a.maxcount == 0) return c.fail(-EINVAL);
  c.begin_op(OP_READDIR);
  rpc::XdrEncoder& e = c.enc();
  e.u64(a.cookie);
  e.fixed_opaque(a.cookieverf.data(), a.cookieverf.size());
  e.u32(a.dircount);
  e.u32(a.maxcount);
  put_bitmap(e, a.attrs);
  return 0;
}

int decode_readdir(ReplyReader& r, const ReaddirArgs& sent, ReaddirRes* out) {
  if (r.next(OP_READDIR, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  d.fixed_opaque(out->cookieverf.data(), out->cookieverf.size());
  out->entries.clear();
  bool more;
  if (d.boolean(&more) < 0) return -EBADMSG;
  while (more) {
    if (out->entries.size() >= kMaxDirEntries) return d.fail("READDIR has too many entries");
    DirEntry ent;
    d.u64(&ent.cookie);
    d.string(&ent.name, kMaxNameBytes);
    if (get_fattr4(d, sent.attrs, &ent.attrs) < 0) return -EBADMSG;
    if (d.boolean(&more) < 0) return -EBADMSG;
    out->entries.push_back(std::move(ent));
  }
  return d.boolean(&out->eof);
}

}  // namespace nfsshim::nfs4

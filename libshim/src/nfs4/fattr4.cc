#include "nfsshim/nfs4/fattr4.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"

namespace nfsshim::nfs4 {

namespace {

constexpr uint32_t kDecodable[] = {
    FATTR4_SUPPORTED_ATTRS, FATTR4_TYPE,      FATTR4_CHANGE,      FATTR4_SIZE,
    FATTR4_FSID,            FATTR4_LEASE_TIME, FATTR4_FILEID,     FATTR4_MODE,
    FATTR4_NUMLINKS,        FATTR4_OWNER,     FATTR4_OWNER_GROUP, FATTR4_RAWDEV,
    FATTR4_SPACE_USED,      FATTR4_TIME_ACCESS, FATTR4_TIME_METADATA, FATTR4_TIME_MODIFY,
    FATTR4_MOUNTED_ON_FILEID, FATTR4_FILEHANDLE, FATTR4_FILES_AVAIL, FATTR4_FILES_FREE,
    FATTR4_FILES_TOTAL,     FATTR4_SPACE_AVAIL, FATTR4_SPACE_FREE, FATTR4_SPACE_TOTAL,
    FATTR4_RDATTR_ERROR,
};

int get_bitmap_words(rpc::XdrDecoder& dec, Bitmap4* b, bool truncate) {
  uint32_t n;
  if (dec.array_count(&n, kMaxBitmapWords, 4, "bitmap4 too long") < 0) return -EBADMSG;
  *b = Bitmap4{};
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t word;
    if (dec.u32(&word) < 0) return -EBADMSG;
    if (i < b->w.size()) {
      b->w[i] = word;
    } else if (word != 0 && !truncate) {
      return dec.fail("bitmap4 names an attribute >= 96");
    }
  }
  return 0;
}

// One attribute value, by number. Only called for decodable bits.
int get_attr(rpc::XdrDecoder& v, uint32_t bit, Fattr4* a) {
  switch (bit) {
    case FATTR4_SUPPORTED_ATTRS: return get_bitmap_truncating(v, &a->supported_attrs);
    case FATTR4_TYPE:
      if (v.u32(&a->type) < 0) return -EBADMSG;
      if (a->type < NF4REG || a->type > NF4NAMEDATTR) return v.fail("fattr4 type out of range");
      return 0;
    case FATTR4_CHANGE: return v.u64(&a->change);
    case FATTR4_SIZE: return v.u64(&a->size);
    case FATTR4_FSID:
      v.u64(&a->fsid.major);
      return v.u64(&a->fsid.minor);
    case FATTR4_LEASE_TIME: return v.u32(&a->lease_time);
    case FATTR4_RDATTR_ERROR: return v.u32(&a->rdattr_error);
    case FATTR4_FILEHANDLE: return v.opaque(&a->filehandle, kFhSize);
    case FATTR4_FILEID: return v.u64(&a->fileid);
    case FATTR4_FILES_AVAIL: return v.u64(&a->files_avail);
    case FATTR4_FILES_FREE: return v.u64(&a->files_free);
    case FATTR4_FILES_TOTAL: return v.u64(&a->files_total);
    case FATTR4_MODE:
      if (v.u32(&a->mode) < 0) return -EBADMSG;
      if (a->mode > 07777) return v.fail("fattr4 mode has bits above 07777");
      return 0;
    case FATTR4_NUMLINKS: return v.u32(&a->numlinks);
    case FATTR4_OWNER: return v.string(&a->owner, kMaxStringBytes);
    case FATTR4_OWNER_GROUP: return v.string(&a->owner_group, kMaxStringBytes);
    case FATTR4_RAWDEV:
      v.u32(&a->rawdev_major);
      return v.u32(&a->rawdev_minor);
    case FATTR4_SPACE_AVAIL: return v.u64(&a->space_avail);
    case FATTR4_SPACE_FREE: return v.u64(&a->space_free);
    case FATTR4_SPACE_TOTAL: return v.u64(&a->space_total);
    case FATTR4_SPACE_USED: return v.u64(&a->space_used);
    case FATTR4_TIME_ACCESS: return get_nfstime(v, &a->time_access);
    case FATTR4_TIME_METADATA: return get_nfstime(v, &a->time_metadata);
    case FATTR4_TIME_MODIFY: return get_nfstime(v, &a->time_modify);
    case FATTR4_MOUNTED_ON_FILEID: return v.u64(&a->mounted_on_fileid);
    default: return v.fail("fattr4 attribute without a decoder");
  }
}

}  // namespace

Bitmap4 getattr_bitmap() {
  Bitmap4 b;
  for (uint32_t bit : {FATTR4_TYPE, FATTR4_CHANGE, FATTR4_SIZE, FATTR4_FSID, FATTR4_FILEID,
                       FATTR4_MODE, FATTR4_NUMLINKS, FATTR4_OWNER, FATTR4_OWNER_GROUP,
                       FATTR4_SPACE_USED, FATTR4_TIME_ACCESS, FATTR4_TIME_METADATA,
                       FATTR4_TIME_MODIFY}) {
    b.set(bit);
  }
  return b;
}

Bitmap4 fsstat_bitmap() {
  Bitmap4 b;
  for (uint32_t bit : {FATTR4_FILES_AVAIL, FATTR4_FILES_FREE, FATTR4_FILES_TOTAL,
                       FATTR4_SPACE_AVAIL, FATTR4_SPACE_FREE, FATTR4_SPACE_TOTAL}) {
    b.set(bit);
  }
  return b;
}

bool bitmap_decodable(const Bitmap4& b) {
  Bitmap4 known;
  for (uint32_t bit : kDecodable) known.set(bit);
  return b.subset_of(known);
}

void put_bitmap(rpc::XdrEncoder& enc, const Bitmap4& b) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < b.w.size(); ++i) {
    if (b.w[i] != 0) n = i + 1;
  }
  enc.u32(n);
  for (uint32_t i = 0; i < n; ++i) enc.u32(b.w[i]);
}

int get_bitmap(rpc::XdrDecoder& dec, Bitmap4* b) { return get_bitmap_words(dec, b, false); }

int get_bitmap_truncating(rpc::XdrDecoder& dec, Bitmap4* b) {
  return get_bitmap_words(dec, b, true);
}

int get_fattr4(rpc::XdrDecoder& dec, const Bitmap4& asked, Fattr4* out) {
  *out = Fattr4{};
  if (get_bitmap(dec, &out->present) < 0) return -EBADMSG;
  if (!out->present.subset_of(asked)) return dec.fail("fattr4 has an attribute not asked for");
  if (!bitmap_decodable(out->present)) return dec.fail("fattr4 has an attribute without a decoder");
  const uint8_t* vals;
  size_t n;
  if (dec.opaque_view(&vals, &n, dec.remaining()) < 0) return -EBADMSG;
  // The values are decoded from their own window so that a wrong length in one
  // attribute cannot read past attr_vals into the next result.
  rpc::XdrDecoder v(vals, n);
  for (uint32_t bit = 0; bit < 96; ++bit) {
    if (out->present.test(bit) && get_attr(v, bit, out) < 0) return dec.fail(v.error());
  }
  if (v.expect_end("fattr4 attr_vals longer than its attributes") < 0) return dec.fail(v.error());
  return 0;
}

Bitmap4 setattrs_bitmap(const SetAttrs& a) {
  Bitmap4 b;
  if (a.set_size) b.set(FATTR4_SIZE);
  if (a.set_mode) b.set(FATTR4_MODE);
  if (a.set_owner) b.set(FATTR4_OWNER);
  if (a.set_owner_group) b.set(FATTR4_OWNER_GROUP);
  if (a.atime_how != TimeHow::kDontChange) b.set(FATTR4_TIME_ACCESS_SET);
  if (a.mtime_how != TimeHow::kDontChange) b.set(FATTR4_TIME_MODIFY_SET);
  return b;
}

static void put_settime(rpc::XdrEncoder& enc, TimeHow how, const Nfstime4& t) {
  if (how == TimeHow::kServerTime) {
    enc.u32(0);  // SET_TO_SERVER_TIME4
  } else {
    enc.u32(1);  // SET_TO_CLIENT_TIME4
    put_nfstime(enc, t);
  }
}

int put_fattr4(rpc::XdrEncoder& enc, const SetAttrs& a) {
  if (a.set_mode && a.mode > 07777) return -EINVAL;
  if (a.owner.size() > kMaxStringBytes || a.owner_group.size() > kMaxStringBytes) return -EINVAL;
  if ((a.atime_how == TimeHow::kClientTime && a.atime.nseconds >= 1000000000u) ||
      (a.mtime_how == TimeHow::kClientTime && a.mtime.nseconds >= 1000000000u)) {
    return -EINVAL;
  }
  put_bitmap(enc, setattrs_bitmap(a));
  // attr_vals is an opaque<>: values in ascending attribute order, length first.
  size_t len_pos = enc.reserve_u32();
  size_t start = enc.size();
  if (a.set_size) enc.u64(a.size);
  if (a.set_mode) enc.u32(a.mode);
  if (a.set_owner) enc.string(a.owner);
  if (a.set_owner_group) enc.string(a.owner_group);
  if (a.atime_how != TimeHow::kDontChange) put_settime(enc, a.atime_how, a.atime);
  if (a.mtime_how != TimeHow::kDontChange) put_settime(enc, a.mtime_how, a.mtime);
  enc.patch_u32(len_pos, static_cast<uint32_t>(enc.size() - start));
  return 0;
}

bool numeric_id(const std::string& s, uint32_t* id) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffu) return false;
  *id = static_cast<uint32_t>(v);
  return true;
}

}  // namespace nfsshim::nfs4

// bitmap4 and fattr4 (RFC 8881 section 5): the attributes a FUSE getattr needs.
// Decoding is exact: the reply's attribute mask must be a subset of what was asked
// and every attribute in it is decoded (there is no "skip unknown": attribute values
// carry no length, so skipping would need knowledge we do not have).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "nfsshim/nfs4/types.h"
#include "nfsshim/rpc/xdr_decoder.h"
#include "nfsshim/rpc/xdr_encoder.h"

namespace nfsshim::nfs4 {

enum Attr : uint32_t {
  FATTR4_SUPPORTED_ATTRS = 0, FATTR4_TYPE = 1, FATTR4_CHANGE = 3, FATTR4_SIZE = 4,
  FATTR4_FSID = 8, FATTR4_LEASE_TIME = 10, FATTR4_RDATTR_ERROR = 11, FATTR4_FILEHANDLE = 19, FATTR4_FILEID = 20,
  FATTR4_FILES_AVAIL = 21, FATTR4_FILES_FREE = 22, FATTR4_FILES_TOTAL = 23, FATTR4_MODE = 33,
  FATTR4_NUMLINKS = 35, FATTR4_OWNER = 36, FATTR4_OWNER_GROUP = 37, FATTR4_RAWDEV = 41,
  FATTR4_SPACE_AVAIL = 42, FATTR4_SPACE_FREE = 43, FATTR4_SPACE_TOTAL = 44, FATTR4_SPACE_USED = 45, FATTR4_TIME_ACCESS = 47, FATTR4_TIME_ACCESS_SET = 48,
  FATTR4_TIME_METADATA = 52, FATTR4_TIME_MODIFY = 53, FATTR4_TIME_MODIFY_SET = 54,
  FATTR4_MOUNTED_ON_FILEID = 55,
};

// Attribute numbers below 96; more is never needed by this client.
struct Bitmap4 {
  std::array<uint32_t, 3> w{};

  Bitmap4& set(uint32_t bit) {
    if (bit < 96) w[bit / 32] |= 1u << (bit % 32);
    return *this;
  }
  bool test(uint32_t bit) const { return bit < 96 && (w[bit / 32] >> (bit % 32)) & 1u; }
  bool empty() const { return (w[0] | w[1] | w[2]) == 0; }
  bool subset_of(const Bitmap4& o) const {
    return (w[0] & ~o.w[0]) == 0 && (w[1] & ~o.w[1]) == 0 && (w[2] & ~o.w[2]) == 0;
  }
  bool operator==(const Bitmap4& o) const { return w == o.w; }
};

// The attributes a FUSE getattr needs (type .. time_modify).
Bitmap4 getattr_bitmap();
// What statfs needs: files_avail/free/total, space_avail/free/total.
Bitmap4 fsstat_bitmap();
// True if every bit is an attribute decode_fattr4 knows (GETATTR/READDIR refuse others).
bool bitmap_decodable(const Bitmap4& b);

void put_bitmap(rpc::XdrEncoder& enc, const Bitmap4& b);
// A bitmap4 whose set bits must all lie below 96 (-EBADMSG otherwise).
int get_bitmap(rpc::XdrDecoder& dec, Bitmap4* b);
// A bitmap4 from the server describing its own set (supported_attrs): bits from 96
// on are dropped, not refused.
int get_bitmap_truncating(rpc::XdrDecoder& dec, Bitmap4* b);

struct Fsid4 {
  uint64_t major = 0;
  uint64_t minor = 0;
};

struct Fattr4 {
  Bitmap4 present;  // what the server returned (a subset of what was asked)
  Bitmap4 supported_attrs;
  uint32_t type = 0;
  uint64_t change = 0;
  uint64_t size = 0;
  Fsid4 fsid;
  uint32_t lease_time = 0;
  uint32_t rdattr_error = 0;  // nfsstat4 of a READDIR entry whose attributes could not be read
  Fh4 filehandle;           // READDIR entries, when asked
  uint64_t fileid = 0;
  uint64_t files_avail = 0, files_free = 0, files_total = 0;
  uint32_t mode = 0;
  uint32_t numlinks = 0;
  std::string owner;        // "uid" when numeric, else "user@domain"
  std::string owner_group;
  uint32_t rawdev_major = 0, rawdev_minor = 0;
  uint64_t space_avail = 0, space_free = 0, space_total = 0;
  uint64_t space_used = 0;
  Nfstime4 time_access, time_metadata, time_modify;
  uint64_t mounted_on_fileid = 0;
};

// fattr4 {bitmap4 attrmask; opaque attr_vals<>} as a reply to a request for `asked`.
// -EBADMSG if the mask has a bit not asked, a value is malformed, or attr_vals is
// not consumed exactly.
int get_fattr4(rpc::XdrDecoder& dec, const Bitmap4& asked, Fattr4* out);

// Attributes we set (SETATTR, OPEN and CREATE createattrs).
enum class TimeHow { kDontChange, kServerTime, kClientTime };
struct SetAttrs {
  bool set_size = false;
  uint64_t size = 0;
  bool set_mode = false;
  uint32_t mode = 0;         // permission bits only (<= 07777)
  bool set_owner = false;
  std::string owner;
  bool set_owner_group = false;
  std::string owner_group;
  TimeHow atime_how = TimeHow::kDontChange;
  Nfstime4 atime;
  TimeHow mtime_how = TimeHow::kDontChange;
  Nfstime4 mtime;
};
Bitmap4 setattrs_bitmap(const SetAttrs& a);
// -EINVAL for a mode over 07777, an owner over the string limit or a bad time.
int put_fattr4(rpc::XdrEncoder& enc, const SetAttrs& a);

// Numeric owner strings ("1000"): true and *id set; false for "user@domain".
bool numeric_id(const std::string& s, uint32_t* id);

}  // namespace nfsshim::nfs4

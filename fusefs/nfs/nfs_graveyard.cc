// The graveyard on the export: /GRAVEYARD/u<uid>/<entry>, entry names from entry_name.h so
// that `nfsshim gc` and the other front ends read them the same way.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

#include "nfs/nfs_fs.h"
#include "nfsshim/entry_name.h"
#include "nfsshim/graveyard.h"
#include "nfsshim/identity.h"
#include "nfsshim/log.h"

namespace nfsshim::fuse::nfsfs {
namespace {

int lookup_or_mkdir(Client& e, const nfs::Cred& c, const nfs::Fh& dir, const std::string& name,
                    uint32_t mode, nfs::Fh* out, nfs::Attr* attr = nullptr) {
  int rv = e.lookup(c, dir, name, out, attr);
  if (rv != -ENOENT) return rv;
  rv = e.mkdir(c, dir, name, mode, out, attr);
  if (rv == -EEXIST) rv = e.lookup(c, dir, name, out, attr);  // a racing mount made it
  return rv;
}

// The owner the server gives what we create (root_squash, id mapping: not always C's uid),
// from a probe directory made and removed in TOP; -1 if that cannot be learnt.
int64_t our_owner_on_server(Client& e, const nfs::Cred& c, const nfs::Fh& top) {
  const Identity me = self_identity();
  const std::string probe = ".owner-probe~" + me.host + "~" + std::to_string(me.pid);
  nfs::Fh fh;
  nfs::Attr a;
  if (e.mkdir(c, top, probe, 0700, &fh, &a) < 0) return -1;
  e.rmdir(c, top, probe);
  return a.uid;
}

// Our u<uid> level must be ours alone: files moved in keep their own modes, and whoever
// could enter it could read them, link them out or remove them under their holders.
int check_user_dir(Client& e, const nfs::Cred& c, const nfs::Fh& top, const std::string& where,
                   const nfs::Attr& a, std::string* why) {
  if (!S_ISDIR(a.st_mode())) {
    *why = "'" + where + "' on the export is not a directory";
    return -ENOTDIR;
  }
  int64_t ours = c.uid;
  if (a.uid != c.uid) ours = our_owner_on_server(e, c, top);
  if (static_cast<int64_t>(a.uid) != ours || (a.mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%o", a.mode & 07777);
    *why = "'" + where + "' on the export is owned by uid " + std::to_string(a.uid) + " with mode " + mode +
           "; expected owner " + (ours < 0 ? std::to_string(c.uid) : std::to_string(ours)) +
           " (this mount's identity on the server) and no group/other access: remove it or fix it";
    return -EPERM;
  }
  return 0;
}

// Finds or makes the graveyard's u<uid> level (*OUT, its attributes *UA) and checks that it
// is ours alone: at mount, and again when it was removed under the mount (regrave).
int find_graveyard(NfsFs& fs, nfs::Fh* out, nfs::Attr* ua, std::string* why) {
  Client& e = *fs.client;
  nfs::Cred c = e.default_cred();
  nfs::Fh top;
  int rv = lookup_or_mkdir(e, c, e.root(), fs.graveyard_name, 0711, &top);
  if (rv < 0) {
    *why = "graveyard '" + fs.graveyard_name + "' on the export: " + std::strerror(-rv);
    return rv;
  }
  const std::string user_dir = fs.graveyard_name + "/u" + std::to_string(c.uid);
  rv = lookup_or_mkdir(e, c, top, "u" + std::to_string(c.uid), 0700, out, ua);
  if (rv < 0) {
    *why = "graveyard '" + user_dir + "': " + std::strerror(-rv);
    return rv;
  }
  return check_user_dir(e, c, top, user_dir, *ua, why);
}

}  // namespace

int open_graveyard(NfsFs& fs, std::string* why) {
  Client& e = *fs.client;
  nfs::Cred c = e.default_cred();
  const std::string user_dir = fs.graveyard_name + "/u" + std::to_string(c.uid);
  nfs::Fh gy;
  nfs::Attr ua;
  int rv = find_graveyard(fs, &gy, &ua, why);
  if (rv < 0) return rv;
  fs.set_graveyard(gy);
  // Owned by another uid than ours and still accepted: the server maps us to it (the probe
  // in check_user_dir), under root_squash to its anonymous uid. Every principal it maps
  // there (other clients' squashed root, all_squash users, nobody) is then the owner too.
  // Allowed, as there is nothing better to own it, but said once per mount.
  if (ua.uid != c.uid)
    SHIM_LOG_WARN("graveyard {} on the export is owned by uid {}, not this mount's uid {}: the server maps "
                  "this mount's identity to uid {} (root_squash or all_squash: its anonymous uid). Whoever "
                  "else it maps there (other clients' squashed root, all_squash users, nobody) owns it too "
                  "and can list, read, link out and remove the files buried there. Remedy: uid= in the URL "
                  "with an identity of its own, or no root_squash for this client",
                  user_dir, ua.uid, c.uid, ua.uid);
  // Reap what owners that are gone left behind (a daemon killed with -9, a reboot).
  std::vector<nfs::DirEntry> ents;
  rv = e.readdirplus(c, gy, &ents);
  if (rv < 0) {
    *why = std::string("listing the graveyard: ") + std::strerror(-rv);
    return rv;
  }
  // By the rule of gc, the preload and a local SOURCE (classify_entry): an entry of another
  // boot or pid namespace waits until foreign_max_age, as another host may carry our name
  // (pods with a fixed hostname:, cloned VMs) and still hold it; one of our boot and pid
  // namespace goes once its owner is gone.
  Identity me = self_identity();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  int removed = 0, kept = 0;
  for (const auto& d : ents) {
    if (d.name == "." || d.name == "..") continue;
    nfs::Attr a;
    bool has_ctime = d.has_attr;
    if (has_ctime) a = d.attr;
    else if (d.has_fh) has_ctime = e.getattr(c, d.fh, &a) == 0;
    // No age known: as young (kept unless its owner is known to be gone).
    const int64_t age = has_ctime ? now - static_cast<int64_t>(a.ctime.tv_sec) : 0;
    ReapDecision rd = classify_entry(d.name, me, age, fs.foreign_max_age_s);
    // A 'b' entry was buried through a kernel mount of this export (the preload, a local
    // SOURCE's daemon). Its owner being gone does not make it free: another process on
    // this host may hold it through that mount, where an unlink by the kernel would keep
    // the file for it (silly rename) but our REMOVE would delete it on the server. So it
    // waits for `nfsshim gc` or the preload, which reap through the kernel, or for the
    // foreign age. Our own entries are 'n'.
    if (rd.action == ReapAction::remove && d.name.rfind("b~", 0) == 0 && age < fs.foreign_max_age_s)
      rd.action = ReapAction::keep;
    if (rd.action == ReapAction::remove && e.remove(c, gy, d.name) == 0) {
      ++removed;
    } else {
      ++kept;
    }
  }
  SHIM_LOG_INFO("graveyard {}/u{}: reaped {} entries of dead owners, kept {}", fs.graveyard_name, c.uid,
                removed, kept);
  return 0;
}

namespace {

std::string fresh_entry(NfsFs& fs) {
  EntryName en;
  en.kind = 'n';  // not 'b': see open_graveyard's reaping
  en.owner = self_identity();
  {
    std::lock_guard<std::mutex> g(fs.bury_mu);
    en.seq = ++fs.bury_seq;
  }
  return en.format();
}

// After RV (ESTALE or ENOENT) from a call into graveyard USED: if the graveyard was removed
// on the export (an operator's rm -rf) while we are mounted, finds or makes it again, with
// the checks of the mount, into fs.graveyard (*NOW). True if *NOW is another graveyard than
// USED (made again here or by a racing bury): the call is worth one more try.
bool regrave(NfsFs& fs, const nfs::Fh& used, int rv, nfs::Fh* now) {
  if (rv != -ESTALE && rv != -ENOENT) return false;  // ENOENT: also the source name gone
  std::lock_guard<std::mutex> g(fs.regrave_mu);
  *now = fs.graveyard_fh();
  if (!(*now == used)) return true;  // another thread made it again meanwhile
  nfs::Fh fh;
  nfs::Attr ua;
  std::string why;
  int frv = find_graveyard(fs, &fh, &ua, &why);
  // A server's cache may still give the removed top level's handle once (ganesha's does,
  // until a call on it fails): then it looks again.
  if (frv == -ESTALE) frv = find_graveyard(fs, &fh, &ua, &why);
  if (frv < 0) {
    SHIM_LOG_WARN("graveyard {}: {} from a call into it, and it cannot be made again: {}", fs.graveyard_name,
                  std::strerror(-rv), why);
    return false;
  }
  if (fh == used) return false;  // the graveyard is there: RV was about something else
  fs.set_graveyard(fh);
  *now = fh;
  // Found under a new handle: made again here, or the same directory whose handle changed
  // (a server whose handles do not survive its restart); only in the first case were the
  // entries of before lost.
  SHIM_LOG_WARN("graveyard {}/u{} on the export has a new handle ({} from a call into it): it was removed "
                "under the mount and is made again (files buried there before are gone for their holders), "
                "or the server changed its handle",
                fs.graveyard_name, fs.client->default_cred().uid, std::strerror(-rv));
  return true;
}

}  // namespace

// Moves DIR/NAME into the graveyard under a fresh entry name.
int bury(NfsFs& fs, const nfs::Fh& dir, const std::string& name, std::string* entry) {
  *entry = fresh_entry(fs);
  Client& e = *fs.client;
  const nfs::Cred c = e.default_cred();
  nfs::Fh gy = fs.graveyard_fh();
  int rv = e.rename(c, dir, name, gy, *entry);
  if (rv < 0 && regrave(fs, gy, rv, &gy)) rv = e.rename(c, dir, name, gy, *entry);
  return rv;
}

// Adds a graveyard entry for FILE by a hard link (the file keeps its name).
int bury_link(NfsFs& fs, const nfs::Fh& file, std::string* entry) {
  *entry = fresh_entry(fs);
  Client& e = *fs.client;
  const nfs::Cred c = e.default_cred();
  nfs::Fh gy = fs.graveyard_fh();
  int rv = e.link(c, file, gy, *entry);
  if (rv < 0 && regrave(fs, gy, rv, &gy)) rv = e.link(c, file, gy, *entry);
  if (rv == -EEXIST) {
    // LINK is not idempotent: re-sent after a lost connection, one that was done answers
    // EEXIST. The name is ours alone; it counts as done if it is this file.
    nfs::Fh got;
    if (e.lookup(c, gy, *entry, &got, nullptr) == 0 && got.data == file.data) rv = 0;
  }
  return rv;
}

}  // namespace nfsshim::fuse::nfsfs

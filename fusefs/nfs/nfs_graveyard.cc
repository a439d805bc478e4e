// The graveyard on the export: /GRAVEYARD/u<uid>/<entry>, entry names from entry_name.h so
// that `nfsshim gc` and the other front ends read them the same way.
#include <unistd.h>

#include <cstring>

#include "nfs/nfs_fs.h"
#include "nfsshim/entry_name.h"
#include "nfsshim/identity.h"
#include "nfsshim/log.h"

namespace nfsshim::fuse::nfsfs {
namespace {

int lookup_or_mkdir(Client& e, const nfs::Cred& c, const nfs::Fh& dir, const std::string& name,
                    uint32_t mode, nfs::Fh* out) {
  int rv = e.lookup(c, dir, name, out, nullptr);
  if (rv != -ENOENT) return rv;
  rv = e.mkdir(c, dir, name, mode, out, nullptr);
  if (rv == -EEXIST) rv = e.lookup(c, dir, name, out, nullptr);  // a racing mount made it
  return rv;
}

}  // namespace

int open_graveyard(NfsFs& fs, std::string* why) {
  Client& e = *fs.client;
  nfs::Cred c = e.default_cred();
  nfs::Fh top;
  int rv = lookup_or_mkdir(e, c, e.root(), fs.graveyard_name, 0711, &top);
  if (rv < 0) {
    *why = "graveyard '" + fs.graveyard_name + "' on the export: " + std::strerror(-rv);
    return rv;
  }
  rv = lookup_or_mkdir(e, c, top, "u" + std::to_string(c.uid), 0700, &fs.graveyard);
  if (rv < 0) {
    *why = "graveyard '" + fs.graveyard_name + "/u" + std::to_string(c.uid) + "': " + std::strerror(-rv);
    return rv;
  }
  // Reap what owners that are gone left behind (a daemon killed with -9, a reboot).
  std::vector<nfs::DirEntry> ents;
  rv = e.readdirplus(c, fs.graveyard, &ents);
  if (rv < 0) {
    *why = std::string("listing the graveyard: ") + std::strerror(-rv);
    return rv;
  }
  Identity me = self_identity();
  int removed = 0, kept = 0;
  for (const auto& d : ents) {
    if (d.name == "." || d.name == "..") continue;
    auto en = EntryName::parse(d.name);
    bool dead = en && en->kind == 'b' && en->owner.host == me.host &&
                (!en->owner.same_boot(me) || !process_alive(en->owner.pid, en->owner.start));
    if (dead && e.remove(c, fs.graveyard, d.name) == 0) {
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
  en.kind = 'b';
  en.owner = self_identity();
  {
    std::lock_guard<std::mutex> g(fs.bury_mu);
    en.seq = ++fs.bury_seq;
  }
  return en.format();
}

}  // namespace

// Moves DIR/NAME into the graveyard under a fresh entry name.
int bury(NfsFs& fs, const nfs::Fh& dir, const std::string& name, std::string* entry) {
  *entry = fresh_entry(fs);
  Client& e = *fs.client;
  return e.rename(e.default_cred(), dir, name, fs.graveyard, *entry);
}

// Adds a graveyard entry for FILE by a hard link (the file keeps its name).
int bury_link(NfsFs& fs, const nfs::Fh& file, std::string* entry) {
  *entry = fresh_entry(fs);
  Client& e = *fs.client;
  const nfs::Cred c = e.default_cred();
  int rv = e.link(c, file, fs.graveyard, *entry);
  if (rv == -EEXIST) {
    // LINK is not idempotent: re-sent after a lost connection, one that was done answers
    // EEXIST. The name is ours alone; it counts as done if it is this file.
    nfs::Fh got;
    if (e.lookup(c, fs.graveyard, *entry, &got, nullptr) == 0 && got.data == file.data) rv = 0;
  }
  return rv;
}

}  // namespace nfsshim::fuse::nfsfs

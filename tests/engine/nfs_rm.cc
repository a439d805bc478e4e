// nfs_rm URL NAME: removes NAME in the export root with a plain engine (no graveyard):
// "another client" deleting a file, for the control half of fuse_nfs_test.sh mem-reader.
#include <cstdio>
#include <cstring>

#include "nfsshim/nfs/engine.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: nfs_rm URL NAME\n");
    return 2;
  }
  nfsshim::nfs::NfsUrl u;
  std::string why;
  std::unique_ptr<nfsshim::nfs::Engine> e;
  if (nfsshim::nfs::parse_nfs_url(argv[1], &u, &why) < 0 || nfsshim::nfs::Engine::open(u, &e, &why) < 0) {
    std::fprintf(stderr, "nfs_rm: %s\n", why.c_str());
    return 1;
  }
  int rv = e->remove(e->default_cred(), e->root(), argv[2]);
  if (rv < 0) {
    std::fprintf(stderr, "nfs_rm: %s: %s\n", argv[2], std::strerror(-rv));
    return 1;
  }
  return 0;
}

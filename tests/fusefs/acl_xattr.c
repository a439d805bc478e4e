// acl_xattr OP PATH: system.posix_acl_access by hand (no libacl, no setfacl on every host).
//   grant  sets user::rw- group::--- other::rw- (makes PATH readable and writable by all)
//   ext    sets user::rw- user:1:r-- group::--- mask::r-- other::--- (an extended ACL)
//   deny   sets user::rwx user:65534:--- group::r-x mask::r-x other::r-x (all but uid 65534)
//   default sets the default ACL user::rwx group::rwx other::rwx (new nodes: no umask)
//   remove removes the ACL
//   has    exits 0 if PATH has an access ACL
// Prints "OP: ok" or "OP: <strerror>" and exits 0 or 1.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

// The kernel's xattr format (linux/posix_acl_xattr.h), little-endian.
struct entry {
  uint16_t tag, perm;
  uint32_t id;
};
struct acl {
  uint32_t version;
  struct entry e[5];
};

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: acl_xattr grant|ext|deny|default|remove|has PATH\n");
    return 2;
  }
  const char *op = argv[1], *path = argv[2], *name = "system.posix_acl_access";
  struct acl a = {2, {{0}}};
  int n = 0, rv;
  if (strcmp(op, "grant") == 0) {
    a.e[n++] = (struct entry){0x01, 6, 0xffffffff};  // USER_OBJ rw-
    a.e[n++] = (struct entry){0x04, 0, 0xffffffff};  // GROUP_OBJ ---
    a.e[n++] = (struct entry){0x20, 6, 0xffffffff};  // OTHER rw-
  } else if (strcmp(op, "ext") == 0) {
    a.e[n++] = (struct entry){0x01, 6, 0xffffffff};  // USER_OBJ rw-
    a.e[n++] = (struct entry){0x02, 4, 1};           // USER 1 r--
    a.e[n++] = (struct entry){0x04, 0, 0xffffffff};  // GROUP_OBJ ---
    a.e[n++] = (struct entry){0x10, 4, 0xffffffff};  // MASK r--
    a.e[n++] = (struct entry){0x20, 0, 0xffffffff};  // OTHER ---
  } else if (strcmp(op, "deny") == 0) {
    a.e[n++] = (struct entry){0x01, 7, 0xffffffff};  // USER_OBJ rwx
    a.e[n++] = (struct entry){0x02, 0, 65534};       // USER 65534 ---
    a.e[n++] = (struct entry){0x04, 5, 0xffffffff};  // GROUP_OBJ r-x
    a.e[n++] = (struct entry){0x10, 5, 0xffffffff};  // MASK r-x
    a.e[n++] = (struct entry){0x20, 5, 0xffffffff};  // OTHER r-x
  } else if (strcmp(op, "default") == 0) {
    name = "system.posix_acl_default";
    a.e[n++] = (struct entry){0x01, 7, 0xffffffff};  // USER_OBJ rwx
    a.e[n++] = (struct entry){0x04, 7, 0xffffffff};  // GROUP_OBJ rwx
    a.e[n++] = (struct entry){0x20, 7, 0xffffffff};  // OTHER rwx
  }
  if (n > 0)
    rv = setxattr(path, name, &a, 4 + n * sizeof(struct entry), 0);
  else if (strcmp(op, "remove") == 0)
    rv = removexattr(path, name);
  else if (strcmp(op, "has") == 0)
    rv = getxattr(path, name, NULL, 0) > 0 ? 0 : -1;
  else {
    fprintf(stderr, "acl_xattr: unknown OP %s\n", op);
    return 2;
  }
  printf("%s: %s\n", op, rv == 0 ? "ok" : strerror(errno));
  return rv == 0 ? 0 : 1;
}

// NFSv4 owner and owner_group strings to local uids and gids (not installed).
#pragma once

#include <cstdint>
#include <string>

namespace nfsshim::nfs41 {

constexpr uint32_t kNobody = 65534;

// OWNER as an id: a numeric string as it is (RFC 7530 5.9, what servers send for sec=sys
// without ID mapping, and for ids without a name); "name@domain" through getpwnam_r
// (getgrnam_r for a GROUP) where the domain is the local NFSv4 domain, as nfsidmap(8)'s
// nsswitch method; anything else kNobody, named once in the log. Thread-safe; names are
// cached (bounded, 600 s).
uint32_t owner_to_id(const std::string& owner, bool group);

// The [General] Domain of the idmapd.conf at PATH, "" if none (or no such file).
std::string idmapd_domain(const std::string& path);

}  // namespace nfsshim::nfs41

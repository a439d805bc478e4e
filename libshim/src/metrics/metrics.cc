#include "nfsshim/metrics.h"

namespace nfsshim {

Counters& counters() {
  static Counters c;
  return c;
}

}  // namespace nfsshim

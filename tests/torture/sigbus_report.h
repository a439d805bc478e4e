// A SIGBUS in a worker is the failure a mapping gives (a page-in answered with an error, or
// an access past the size the kernel believes): the report names the mapping, the file
// offset and the file's size now, so a run that dies this way says where.
#pragma once

namespace torture {

// Installs the reporter (once, at worker start). It writes to stderr, then the process
// dies of SIGBUS (sent again with the default action), even if the fault would not repeat.
void install_sigbus_report();

}  // namespace torture

// Linked into every program of the build under the sanitizers only
// (CMakeLists.txt), where it shortens the end of each process.
//
// At exit, LeakSanitizer scans every writable segment of the program for
// pointers. The sanitizer runtime is linked into the program and brings
// about 10 MB of zero-filled globals (its stack depot and allocator caches)
// that a short process never touches; the scan then faults their 4 KiB
// pages in one by one, about 2,500 faults, at some 20 us each on a
// paging hypervisor. One madvise(MADV_POPULATE_READ) maps them all in one
// call just before the scan: an atexit handler registered here, after the
// runtime registered its leak check, runs before it. The scan still reads
// every page; a process that ends in _exit (a crash point) does neither.
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

// Where the zero-filled globals begin and where the program's image ends
// (GNU ld and lld define both).
extern "C" char __bss_start[], _end[];

namespace {

void MapZeroGlobals() {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(__bss_start) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(_end) & ~(kPage - 1);
  // A kernel before 5.14 answers EINVAL, and the scan faults the pages in itself.
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ);
}

__attribute__((constructor)) void RegisterBeforeTheLeakCheck() { std::atexit(MapZeroGlobals); }

}  // namespace

// The bytes a TCP socket has received (TCP_INFO's tcpi_bytes_received, Linux
// 4.1+), apart from connections.cc: <linux/tcp.h>, which has the field,
// cannot be included beside <netinet/tcp.h>, which httplib.h includes.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace snapsink {

bool TcpBytesReceived(int fd, uint64_t* out) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  if (len < offsetof(tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received)) return false;
  *out = info.tcpi_bytes_received;
  return true;
}

}  // namespace snapsink

// LD_PRELOAD recorder of a process's file-system writes, for the power-cut
// states of tests/power_cut_lmdb_test.cc. Everything under the directory
// SNAPSINK_FSREC_ROOT is logged to SNAPSINK_FSREC_LOG, one operation a line:
//   C path            a file created (open with O_CREAT of a missing path)
//   W path off len blob_off sync   bytes written (their copy at blob_off in
//                     SNAPSINK_FSREC_LOG.blob); sync=1 on an O_SYNC/O_DSYNC fd
//   T path size       truncated / extended
//   S path            fsync or fdatasync of a file or directory
//   M path            mkdir
//   R from to         rename
//   U path            unlink (or rmdir)
// LMDB writes data.mdb with pwrite and lseek+writev (no MDB_WRITEMAP) and
// its meta pages through an O_DSYNC descriptor; all of that is seen here.
// Built as libsnapsink_fsrec.so beside the snapsink binary (CMakeLists.txt).
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1, blob_fd = -1;
static off_t blob_off = 0;
static const char* root = NULL;
static size_t root_len = 0;

#define REAL(ret, name, ...)                                   \
  static ret (*real_##name)(__VA_ARGS__) = NULL;               \
  if (!real_##name) real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

static int Setup(void) {
  if (root == NULL) {
    const char* r = getenv("SNAPSINK_FSREC_ROOT");
    const char* l = getenv("SNAPSINK_FSREC_LOG");
    if (r == NULL || l == NULL) return 0;
    static int (*ropen)(const char*, int, ...) = NULL;
    if (!ropen) ropen = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open");
    char blob[4096];
    snprintf(blob, sizeof blob, "%s.blob", l);
    log_fd = ropen(l, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    blob_fd = ropen(blob, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    struct stat st;
    if (blob_fd >= 0 && fstat(blob_fd, &st) == 0) blob_off = st.st_size;
    root_len = strlen(r);
    root = r;
  }
  return log_fd >= 0;
}

static int Under(const char* path) {
  return path != NULL && strncmp(path, root, root_len) == 0 && (path[root_len] == '/' || path[root_len] == 0);
}

static int FdPath(int fd, char* out, size_t n) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t k = readlink(link, out, n - 1);
  if (k < 0) return 0;
  out[k] = 0;
  return 1;
}

static int AtPath(int dirfd, const char* name, char* out, size_t n) {
  if (name[0] == '/' ) {
    snprintf(out, n, "%s", name);
    return 1;
  }
  char dir[4096];
  if (dirfd == AT_FDCWD) {
    if (getcwd(dir, sizeof dir) == NULL) return 0;
  } else if (!FdPath(dirfd, dir, sizeof dir)) {
    return 0;
  }
  const size_t dl = strlen(dir), nl = strlen(name);
  if (dl + 1 + nl + 1 > n) return 0;
  memcpy(out, dir, dl);
  out[dl] = '/';
  memcpy(out + dl + 1, name, nl + 1);
  return 1;
}

static void Log(const char* fmt, ...) {
  char line[9000];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  REAL(ssize_t, write, int, const void*, size_t);
  if (k > 0) real_write(log_fd, line, (size_t)k);
}

static void LogWrite(int fd, off_t off, const struct iovec* iov, int n, ssize_t done) {
  char path[4096];
  if (done <= 0 || !FdPath(fd, path, sizeof path) || !Under(path)) return;
  REAL(ssize_t, write, int, const void*, size_t);
  int fl = fcntl(fd, F_GETFL);
  const int sync = (fl & (O_DSYNC | O_SYNC)) != 0;
  off_t at = blob_off;
  size_t left = (size_t)done;
  for (int i = 0; i < n && left > 0; ++i) {
    size_t len = iov[i].iov_len < left ? iov[i].iov_len : left;
    real_write(blob_fd, iov[i].iov_base, len);
    left -= len;
  }
  blob_off += done;
  Log("W\t%s\t%lld\t%lld\t%lld\t%d\n", path, (long long)off, (long long)done, (long long)at, sync);
}

static off_t WriteOffset(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl & O_APPEND) {
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : 0;
  }
  return lseek(fd, 0, SEEK_CUR);
}

static int OpenCommon(int dirfd, const char* name, int flags, mode_t mode, int is_at) {
  REAL(int, openat, int, const char*, int, ...);
  if (!Setup()) return real_openat(dirfd, name, flags, mode);
  char path[4096];
  int watched = AtPath(dirfd, name, path, sizeof path) && Under(path);
  int existed = watched && access(path, F_OK) == 0;
  int fd = real_openat(dirfd, name, flags, mode);
  (void)is_at;
  if (fd >= 0 && watched) {
    pthread_mutex_lock(&mu);
    if ((flags & O_CREAT) && !existed) Log("C\t%s\n", path);
    if ((flags & O_TRUNC) && existed) Log("T\t%s\t0\n", path);
    pthread_mutex_unlock(&mu);
  }
  return fd;
}

int open(const char* p, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
  return OpenCommon(AT_FDCWD, p, flags, mode, 0);
}
int open64(const char* p, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
  return OpenCommon(AT_FDCWD, p, flags, mode, 0);
}
int openat(int d, const char* p, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
  return OpenCommon(d, p, flags, mode, 1);
}
int openat64(int d, const char* p, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
  return OpenCommon(d, p, flags, mode, 1);
}
int creat(const char* p, mode_t mode) { return OpenCommon(AT_FDCWD, p, O_CREAT | O_WRONLY | O_TRUNC, mode, 0); }

ssize_t write(int fd, const void* buf, size_t n) {
  REAL(ssize_t, write, int, const void*, size_t);
  if (!Setup() || fd == log_fd || fd == blob_fd) return real_write(fd, buf, n);
  pthread_mutex_lock(&mu);
  off_t off = WriteOffset(fd);
  ssize_t r = real_write(fd, buf, n);
  struct iovec v = {(void*)buf, n};
  LogWrite(fd, off, &v, 1, r);
  pthread_mutex_unlock(&mu);
  return r;
}

static ssize_t PwriteCommon(int fd, const void* buf, size_t n, off_t off) {
  REAL(ssize_t, pwrite64, int, const void*, size_t, off_t);
  if (!Setup()) return real_pwrite64(fd, buf, n, off);
  pthread_mutex_lock(&mu);
  ssize_t r = real_pwrite64(fd, buf, n, off);
  struct iovec v = {(void*)buf, n};
  LogWrite(fd, off, &v, 1, r);
  pthread_mutex_unlock(&mu);
  return r;
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) { return PwriteCommon(fd, buf, n, off); }
ssize_t pwrite64(int fd, const void* buf, size_t n, off_t off) { return PwriteCommon(fd, buf, n, off); }

ssize_t writev(int fd, const struct iovec* iov, int n) {
  REAL(ssize_t, writev, int, const struct iovec*, int);
  if (!Setup()) return real_writev(fd, iov, n);
  pthread_mutex_lock(&mu);
  off_t off = WriteOffset(fd);
  ssize_t r = real_writev(fd, iov, n);
  LogWrite(fd, off, iov, n, r);
  pthread_mutex_unlock(&mu);
  return r;
}

ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t off) {
  REAL(ssize_t, pwritev, int, const struct iovec*, int, off_t);
  if (!Setup()) return real_pwritev(fd, iov, n, off);
  pthread_mutex_lock(&mu);
  ssize_t r = real_pwritev(fd, iov, n, off);
  LogWrite(fd, off, iov, n, r);
  pthread_mutex_unlock(&mu);
  return r;
}
ssize_t pwritev64(int fd, const struct iovec* iov, int n, off_t off) { return pwritev(fd, iov, n, off); }

static void LogFd(const char* op, int fd) {
  char path[4096];
  if (!Setup() || !FdPath(fd, path, sizeof path) || !Under(path)) return;
  pthread_mutex_lock(&mu);
  Log("%s\t%s\n", op, path);
  pthread_mutex_unlock(&mu);
}

int fsync(int fd) {
  REAL(int, fsync, int);
  int r = real_fsync(fd);
  if (r == 0) LogFd("S", fd);
  return r;
}
int fdatasync(int fd) {
  REAL(int, fdatasync, int);
  int r = real_fdatasync(fd);
  if (r == 0) LogFd("S", fd);
  return r;
}

static void LogTruncate(const char* path, off_t size) {
  if (!Setup() || !Under(path)) return;
  pthread_mutex_lock(&mu);
  Log("T\t%s\t%lld\n", path, (long long)size);
  pthread_mutex_unlock(&mu);
}
int ftruncate(int fd, off_t size) {
  REAL(int, ftruncate, int, off_t);
  int r = real_ftruncate(fd, size);
  char path[4096];
  if (r == 0 && Setup() && FdPath(fd, path, sizeof path)) LogTruncate(path, size);
  return r;
}
int ftruncate64(int fd, off_t size) { return ftruncate(fd, size); }
int truncate(const char* p, off_t size) {
  REAL(int, truncate, const char*, off_t);
  int r = real_truncate(p, size);
  char path[4096];
  if (r == 0 && Setup() && AtPath(AT_FDCWD, p, path, sizeof path)) LogTruncate(path, size);
  return r;
}
int truncate64(const char* p, off_t size) { return truncate(p, size); }

static void LogPath(const char* op, int dirfd, const char* name) {
  char path[4096];
  if (!Setup() || !AtPath(dirfd, name, path, sizeof path) || !Under(path)) return;
  pthread_mutex_lock(&mu);
  Log("%s\t%s\n", op, path);
  pthread_mutex_unlock(&mu);
}

int mkdir(const char* p, mode_t m) {
  REAL(int, mkdir, const char*, mode_t);
  int r = real_mkdir(p, m);
  if (r == 0) LogPath("M", AT_FDCWD, p);
  return r;
}
int mkdirat(int d, const char* p, mode_t m) {
  REAL(int, mkdirat, int, const char*, mode_t);
  int r = real_mkdirat(d, p, m);
  if (r == 0) LogPath("M", d, p);
  return r;
}
int unlink(const char* p) {
  char path[4096];
  int watched = Setup() && AtPath(AT_FDCWD, p, path, sizeof path);
  REAL(int, unlink, const char*);
  int r = real_unlink(p);
  if (r == 0 && watched) LogPath("U", AT_FDCWD, path);
  return r;
}
int rmdir(const char* p) {
  char path[4096];
  int watched = Setup() && AtPath(AT_FDCWD, p, path, sizeof path);
  REAL(int, rmdir, const char*);
  int r = real_rmdir(p);
  if (r == 0 && watched) LogPath("U", AT_FDCWD, path);
  return r;
}
int unlinkat(int d, const char* p, int flags) {
  char path[4096];
  int watched = Setup() && AtPath(d, p, path, sizeof path);
  REAL(int, unlinkat, int, const char*, int);
  int r = real_unlinkat(d, p, flags);
  if (r == 0 && watched) LogPath("U", AT_FDCWD, path);
  return r;
}

static void LogRename(int fd1, const char* a, int fd2, const char* b) {
  char from[4096], to[4096];
  if (!Setup() || !AtPath(fd1, a, from, sizeof from) || !AtPath(fd2, b, to, sizeof to)) return;
  if (!Under(from) && !Under(to)) return;
  pthread_mutex_lock(&mu);
  Log("R\t%s\t%s\n", from, to);
  pthread_mutex_unlock(&mu);
}
int rename(const char* a, const char* b) {
  REAL(int, rename, const char*, const char*);
  int r = real_rename(a, b);
  if (r == 0) LogRename(AT_FDCWD, a, AT_FDCWD, b);
  return r;
}
int renameat(int d1, const char* a, int d2, const char* b) {
  REAL(int, renameat, int, const char*, int, const char*);
  int r = real_renameat(d1, a, d2, b);
  if (r == 0) LogRename(d1, a, d2, b);
  return r;
}
int renameat2(int d1, const char* a, int d2, const char* b, unsigned flags) {
  REAL(int, renameat2, int, const char*, int, const char*, unsigned);
  int r = real_renameat2(d1, a, d2, b, flags);
  if (r == 0) LogRename(d1, a, d2, b);
  return r;
}

// libpcap for reading and writing pcap/pcapng (Debian: libpcap-dev).
#include <pcap/pcap.h>
#include <stdio.h>
#include <sys/types.h>

// glibc's fopencookie, declared under our own names: Swift's Glibc module is built without
// _GNU_SOURCE, which hides it. Same layout and symbol, so the ABI is glibc's own. It lets libpcap
// read standard input through the bytes GATTLab already buffered to detect the format.
typedef struct {
    ssize_t (*read)(void *cookie, char *buffer, size_t size);
    ssize_t (*write)(void *cookie, const char *buffer, size_t size);
    int (*seek)(void *cookie, long long *offset, int whence);
    int (*close)(void *cookie);
} gattlab_cookie_io_functions;

FILE *gattlab_fopencookie(void *cookie, const char *mode, gattlab_cookie_io_functions functions)
    __asm__("fopencookie");

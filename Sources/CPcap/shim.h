// libpcap for reading and writing pcap/pcapng (Debian: libpcap-dev).
#include <pcap/pcap.h>
#include <stdio.h>

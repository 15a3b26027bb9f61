// libbluetooth (BlueZ): addresses, and kernel L2CAP sockets for the bluez: bearer (Debian: libbluetooth-dev).
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

#include <stdint.h>

/* htobs()/btohs() are function-like macros and BDADDR_ANY a compound literal: none of them
   imports into Swift, so they are wrapped here. */
static inline uint16_t gattlab_htobs(uint16_t value) { return htobs(value); }
static inline uint16_t gattlab_btohs(uint16_t value) { return btohs(value); }
static inline int gattlab_bdaddr_is_any(const bdaddr_t *address) { return bacmp(address, BDADDR_ANY) == 0; }

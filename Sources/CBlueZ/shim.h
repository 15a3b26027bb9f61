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

#include <string.h>
#include <sys/ioctl.h>

/* Whether the kernel still holds an LE connection to `peer` on the controller of the HCI socket
   `dd`, in any state (HCIGETCONNINFO; its _IOR request number does not import into Swift). */
static inline int gattlab_le_link_exists(int dd, const bdaddr_t *peer) {
    char buffer[sizeof(struct hci_conn_info_req) + sizeof(struct hci_conn_info)];
    struct hci_conn_info_req *request = (struct hci_conn_info_req *)buffer;
    memset(buffer, 0, sizeof buffer);
    bacpy(&request->bdaddr, peer);
    request->type = 0x80; /* LE_LINK in the kernel; libbluetooth's headers name only ACL_LINK and SCO links */
    return ioctl(dd, HCIGETCONNINFO, request) == 0;
}

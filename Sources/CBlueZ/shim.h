// libbluetooth (BlueZ) for addresses and, later, kernel L2CAP sockets (Debian: libbluetooth-dev).
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

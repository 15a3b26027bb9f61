#!/bin/busybox sh
# /init of the VM harness's initramfs (Scripts/vm/vm-test.sh builds it): loads the virtio and 9p
# modules, mounts the host's root read-only and the harness's work folder read-write over 9p,
# (the work folder itself comes read-only with the root; only its out/ is writable), and
# switch_roots into the host root, where Scripts/vm/guest.sh runs as PID 1 (it loads modules
# from the extracted kernel with modprobe -d: the host may have no /lib/modules to mount over).
# Parameters come on the kernel command line:
#   gvm.work=DIR (the work folder, same path as on the host) gvm.repo=DIR gvm.kroot=DIR
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
WORK=$(arg gvm.work); REPO=$(arg gvm.repo); KROOT=$(arg gvm.kroot)
while read -r m; do insmod "/mods/$m" 2>/dev/null || echo "initramfs: insmod $m failed"; done < /mods/order
fail() { echo "initramfs: FAIL: $*"; echo o > /proc/sysrq-trigger; sleep 5; }
# cache=loose: without it every program start re-reads its libraries over 9p (slow under TCG).
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /newroot || fail "9p root mount"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out "/newroot$WORK/out" || fail "9p out mount"
for d in proc sys dev; do mount --move /$d /newroot/$d; done
exec switch_root /newroot /bin/bash "$REPO/Scripts/vm/guest.sh" "$WORK" "$REPO" "$KROOT"

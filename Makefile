# GATTLab: two commands on a fresh Debian machine with Swift:
#   make demo   installs what is missing, builds, and decodes the bundled capture
#   make test   the same set-up, then every test (tshark conformance included); a clone without
#               ../shared skips the real-capture tests and says so in its last line
# make install [PREFIX=/usr/local]   release binary, man pages, bash/zsh/fish completions
# make uninstall [PREFIX=/usr/local] removes exactly what install wrote
# Other targets: make build, make bench (release build, GATTLab vs tshark), make clean,
#   make assigned-numbers YAML=DIR   regenerates the SIG names table from a bluetooth-SIG/public checkout
#   make vm-test (a real kernel BlueZ link in a qemu VM: emulate --hci, Captures/ sessions replayed over bluez:,
#     black-box fuzzing through the kernel, live captures checked against btmon and tshark; Scripts/vm/).
#   make fuzz TARGET=status TIME=60 [QUIRKS=ssid-overflow]   one libFuzzer target (ASan) on Corpus/TARGET
#     (the one driver, gattlab-fuzz, is built once for every target)
#   make fuzz-smoke   every fuzz target briefly in-process, then every one under libFuzzer and ASan as
#     .clusterfuzzlite/build.sh builds them (CI runs it after make test)

SWIFT ?= swift
# bluez: btmon, which `gattlab capture --via btmon` runs (and a test runs for real: on a fresh
# machine it used to be installed only later, by the VM stage, and the test skipped).
APT_PACKAGES := libpcap-dev libbluetooth-dev bluez tshark python3 python3-jsonschema chromium
DEMO := Captures/speaker-ota-demo.btsnoop
GATTLAB := .build/debug/gattlab

PREFIX ?= /usr/local

TARGET ?= status
TIME ?= 60
QUIRKS ?=

.PHONY: all setup revision build demo test install uninstall bench clean fuzz fuzz-smoke vm-test assigned-numbers

all: build

# Installs the system packages the build and tests need: as root with apt-get, otherwise it
# prints the exact command to run and stops.
setup:
	@command -v $(SWIFT) >/dev/null || { echo "error: swift not found; install Swift 6 (https://swift.org/install) and retry"; exit 1; }
	@# Installed, not only known: a package removed without --purge still answers dpkg -s.
	@missing=""; for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing >/dev/null || exit 1; \
	  else \
	    echo "error: missing packages; run:  sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi
	@# Bumble (PyPI, pinned) in .venv-bumble/ for BumbleCaptureTests; without PyPI they skip, build and demo go on.
	@Scripts/bumble-env.sh || true

# The git revision for gattlab --version (Sources/CBuildInfo/revision.h, rewritten only when it changes).
revision:
	@Scripts/revision.sh

build: setup revision
	$(SWIFT) build --product gattlab

demo: build
	@echo "== gattlab info $(DEMO)"
	@$(GATTLAB) info $(DEMO)
	@echo
	@echo "== gattlab timeline $(DEMO)   (what happened and why it failed)"
	@$(GATTLAB) timeline $(DEMO)
	@$(GATTLAB) timeline --format html -o .build/demo-report.html --force $(DEMO)
	@echo "   open .build/demo-report.html in a browser for the time axis; every PDU: gattlab decode $(DEMO)"
	@echo
	@echo "== gattlab audit $(DEMO)   (where the Wi-Fi password went, how it was protected)"
	@$(GATTLAB) audit $(DEMO)
	@echo
	@echo "== gattlab redact $(DEMO) -o .build/demo-shareable.btsnoop   (safe to share: secrets overwritten, checked)"
	@$(GATTLAB) redact --force $(DEMO) -o .build/demo-shareable.btsnoop
	@echo
	@echo "== gattlab replay run $(DEMO) --target emu:speaker   (the field session against a healthy emulated speaker)"
	@$(GATTLAB) replay run $(DEMO) --target emu:speaker; test $$? -le 1

test: setup revision
	SWIFT=$(SWIFT) Scripts/test.sh

install: setup revision
	$(SWIFT) build -c release --product gattlab
	SWIFT=$(SWIFT) Scripts/install.sh "$(DESTDIR)$(PREFIX)"

uninstall:
	Scripts/install.sh --uninstall "$(DESTDIR)$(PREFIX)"

# libFuzzer and ASan come with the Swift toolchain (clang's runtime in /opt/swift): no package needed.
# The driver (product gattlab-fuzz) is built once per set of instrumented modules: in .build-fuzz
# for the targets that exercise every module, in .build-fuzz/only-<codec> for a codec's targets.
fuzz: build
	GATTLAB_FUZZ_QUIRKS=$(QUIRKS) Scripts/libfuzzer.sh $(TARGET) $(TIME)

fuzz-smoke: build
	Scripts/fuzz-smoke.sh

bench: setup revision
	$(SWIFT) build -c release --product gattlab
	python3 Benchmarks/bench.py --gattlab .build/release/gattlab

# Boots a Debian kernel under qemu with two virtual LE controllers and checks GATTLab against the
# kernel's BlueZ stack (installs qemu and BlueZ tools as root; caches the kernel in .build-vm/).
vm-test:
	bash Scripts/vm/vm-test.sh

clean:
	rm -rf .build .build-fuzz bench-out

# Regenerates Sources/AssignedNumbers/AssignedNumbers+Generated.swift from the Bluetooth SIG's
# YAML: YAML is a checkout of https://bitbucket.org/bluetooth-SIG/public (its git revision goes
# into the file's header; SOURCE="..." says where it came from otherwise). The build never needs it.
assigned-numbers:
	@test -n "$(YAML)" || { echo "usage: make assigned-numbers YAML=DIR [SOURCE='where DIR came from']"; exit 2; }
	python3 Scripts/assigned-numbers.py "$(YAML)" $(if $(SOURCE),--source "$(SOURCE)")

/// ATT bearers (see DESIGN.md): filled in with the emulator.

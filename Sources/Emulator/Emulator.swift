/// Emulated devices (see DESIGN.md): filled in by issue 3.

"""The demo: the grading loop on the bundled sample class, with a Canvas-style download made from samples."""

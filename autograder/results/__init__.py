"""Results: the typed result every consumer reads (result), its store (store) and renderers (render)."""

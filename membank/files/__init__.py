"""The file layer: reading and writing `.writenow/` files. It knows nothing of the index."""

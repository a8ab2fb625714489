"""Character cards and lorebooks (SillyTavern and friends): import into characters/ and world/, export back
(docs/import-export.md)."""

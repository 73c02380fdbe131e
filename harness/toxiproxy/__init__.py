"""splitbrain's own Toxiproxy-compatible link proxy server (standard library only)."""

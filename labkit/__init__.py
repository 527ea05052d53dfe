"""What every lab shares: verdicts and claims, chart words, figure style, snippets, the lock."""

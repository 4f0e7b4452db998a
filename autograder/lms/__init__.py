"""Learning management systems: where rosters and submissions come from and grades go."""

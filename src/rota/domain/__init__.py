"""Pure domain logic: no I/O and no clock reads. Time always comes in as an argument."""

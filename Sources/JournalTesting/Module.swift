// JournalTesting: the project's test rigs, kept out of the modules an app links — an in-memory
// file system that can lose what was not synced (MemoryFileSystem), a service that injects faults
// (FaultyService), and the checks every fuzz target runs on arbitrary bytes (the …FuzzChecks).
// The tests, the fuzz targets and the simulation use it; nothing a library ships imports it.

// JournalSimulation: the seeded multi-device simulation (`jlog simulate`, Spec/SYNC.md §8) over
// the reference service in process, with the test rigs' faults. The CLI and the tests import it;
// no library does.

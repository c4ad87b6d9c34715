// JournalQuery (layer 3): lists over a store — materialising a list from its newest snapshot and
// the entries after it, histories, snapshots, the list compactor, and the app's door (`ListStore`,
// observations on the store's executor). It imports JournalLog and ListModel; never the sync
// layer, networking, SwiftNIO or crypto.

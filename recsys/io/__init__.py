"""The data contract: the CSV files a catalogue is trained from and the schema file that adapts
them. `readers` reads items, interactions and judgments (`read_items`, `InteractionStream`, ...);
`text` is the structural pass (bytes -> text -> records), `contract` the column and value checks,
`headers` maps a shop's own column names to the contract's, `ids` is what a valid item id is,
`schema` the optional TOML schema file."""

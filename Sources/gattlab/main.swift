import GATTLabCLI

GattlabCommand.start()

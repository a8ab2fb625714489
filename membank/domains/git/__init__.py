"""The project's git files: the lines membank's files need in `.gitattributes` and `.gitignore`."""

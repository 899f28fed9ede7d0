"""The command line (`recsys`): the one package that wires the library (recsys/), training
(training/) and the service (api/) together. api/ and training/ never import each other: what
the service needs of training (the retrain jobs' runner, the first start's default model) is
handed to it from here (cli/app.py, cli/serve.py)."""

"""The guided lesson: its steps, numbers and options, and a class answering them together."""

"""The notes' regression RNN (000/001 "RNN"): a Linear applied per time step in a Python loop
(`timestep_loop`), and the hidden state carried across training steps with `h_state.data`
(`hidden_detach`); the notes' network, built from the note file, in `cases._lib.notes_rnn`."""

package config

// FieldError is a Config setting that Resolve, server.Start or server.CheckReport
// refuses. Field is the setting's path below Config ("StateDir", "TLS.KeyFile",
// "Output.Mechanism"). The message names every setting it mentions the same way, as
// Config.<path>, so that a command-line front end can translate those names into its
// flags (cmd/curator does, with FlagName) and a program can tell which setting to fix
// with errors.As.
type FieldError struct {
	Field string
	// Msg says what is wrong and what to do, without the "server: " prefix.
	Msg string
	// Err is the underlying cause, if any; it is appended to the message.
	Err error
}

func (e *FieldError) Error() string {
	if e.Err != nil {
		return "server: " + e.Msg + ": " + e.Err.Error()
	}
	return "server: " + e.Msg
}

func (e *FieldError) Unwrap() error { return e.Err }

func fieldError(field, msg string) *FieldError { return &FieldError{Field: field, Msg: msg} }

package config

// FieldError is a Config setting that Resolve, server.Start or server.CheckReport
// refuses. Field is the setting's name (Config.Bind: "state", "tls-key",
// "output-privacy"), so that a program can tell which setting to fix with errors.As;
// the message names every setting it mentions as its flag (Config.Flag), as the
// operator writes it.
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

// Refuse is the FieldError of the setting of field (the address of one of c's fields).
func (c *Config) Refuse(field any, msg string) *FieldError {
	return &FieldError{Field: c.Bind().Name(field), Msg: msg}
}

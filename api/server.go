package api

import (
	"log/slog"
	"net/http"
	"time"
)

// Server timeouts. The write timeout outlasts the longest wait.
const (
	serverReadHeaderTimeout = 5 * time.Second
	serverReadTimeout       = 15 * time.Second
	serverWriteMargin       = 15 * time.Second
	serverIdleTimeout       = 120 * time.Second
	serverMaxHeaderBytes    = 64 << 10
)

// NewServer returns an http.Server for h on addr with timeouts fit for the
// API: slow clients cannot hold connections, and the write timeout outlasts
// the longest wait h allows (when h is a *Handler; DefaultMaxWait
// otherwise). Its error log goes to h's logger.
func NewServer(addr string, h http.Handler) *http.Server {
	maxWait := DefaultMaxWait
	logger := slog.New(slog.DiscardHandler)
	if ah, ok := h.(*Handler); ok {
		maxWait, logger = ah.maxWait, ah.logger
	}
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: serverReadHeaderTimeout,
		ReadTimeout:       serverReadTimeout,
		WriteTimeout:      maxWait + serverWriteMargin,
		IdleTimeout:       serverIdleTimeout,
		MaxHeaderBytes:    serverMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

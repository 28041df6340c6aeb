//! How errors and panics of the native methods reach Java: as a
//! `io.looseleaf.spark.LooseleafException` carrying the message (which names the file), the
//! method then returning 0 or `null`.

use std::any::Any;
use std::fmt;

use jni::Env;
use jni::errors::ErrorPolicy;
use jni::strings::JNIString;

/// Java class of the exceptions thrown.
const EXCEPTION_CLASS: &jni::strings::JNIStr = jni::jni_str!("io/looseleaf/spark/LooseleafException");

/// The error of a native method: a message for the Java exception.
#[derive(Debug)]
pub struct Failure(String);

impl Failure {
    /// A failure with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failure {}

impl From<looseleaf::Error> for Failure {
    fn from(e: looseleaf::Error) -> Self {
        Self(e.to_string())
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Self(format!("JNI: {e}"))
    }
}

/// Throws a `LooseleafException` for an error or a panic (unless an exception is already
/// pending, which then propagates) and returns the default value.
pub struct ThrowLooseleafException;

fn throw(env: &mut Env<'_>, message: String) {
    if !env.exception_check() {
        // A failure to throw leaves the JVM's own pending error (e.g. NoClassDefFoundError).
        let _ = env.throw_new(EXCEPTION_CLASS, JNIString::new(message));
    }
}

impl<T: Default> ErrorPolicy<T, Failure> for ThrowLooseleafException {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _captures: &mut (),
        err: Failure,
    ) -> jni::errors::Result<T> {
        throw(env, err.0);
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _captures: &mut (),
        payload: Box<dyn Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        // The payload is leaked rather than dropped: dropping it could panic again.
        std::mem::forget(payload);
        throw(env, format!("internal error (a bug in looseleaf): {message}"));
        Ok(T::default())
    }
}

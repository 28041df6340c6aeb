//! How errors and panics of the native methods reach Java: as an exception of the class of the
//! error's kind (`looseleaf::ErrorKind`: `LooseleafNotFoundException`,
//! `LooseleafCorruptFileException`, ...; all subclasses of `LooseleafException`), carrying the
//! message (which names the file) and the file, the method then returning 0 or `null`.

use std::any::Any;
use std::fmt;

use jni::errors::ErrorPolicy;
use jni::objects::{JObject, JThrowable, JValue};
use jni::strings::{JNIStr, JNIString};
use jni::{Env, jni_sig, jni_str};
use looseleaf::ErrorKind;

/// The base class of every exception thrown, and the one thrown when a more precise one cannot be.
const BASE: &JNIStr = jni_str!("io/looseleaf/spark/LooseleafException");

/// The Java class of each kind of failure.
fn class_of(kind: Kind) -> &'static JNIStr {
    match kind {
        Kind::Core(ErrorKind::NotFound) => jni_str!("io/looseleaf/spark/LooseleafNotFoundException"),
        Kind::Core(ErrorKind::PermissionDenied) => jni_str!("io/looseleaf/spark/LooseleafPermissionException"),
        Kind::Core(ErrorKind::Io) => jni_str!("io/looseleaf/spark/LooseleafIOException"),
        Kind::Core(ErrorKind::Changed) => jni_str!("io/looseleaf/spark/LooseleafObjectChangedException"),
        Kind::Core(ErrorKind::Corrupt) => jni_str!("io/looseleaf/spark/LooseleafCorruptFileException"),
        Kind::Core(ErrorKind::Unsupported) => jni_str!("io/looseleaf/spark/LooseleafUnsupportedException"),
        Kind::Core(ErrorKind::InvalidArgument) => {
            jni_str!("io/looseleaf/spark/LooseleafInvalidArgumentException")
        }
        Kind::Core(ErrorKind::Schema) => jni_str!("io/looseleaf/spark/LooseleafSchemaException"),
        Kind::Interrupted => jni_str!("io/looseleaf/spark/LooseleafInterruptedException"),
        _ => BASE,
    }
}

/// What kind of failure, as Java tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A core error's kind.
    Core(ErrorKind),
    /// The task was killed or its thread interrupted while the native side waited.
    Interrupted,
    /// Anything else: a request the connector got wrong, a bad handle, JNI itself.
    Other,
}

/// The error of a native method: the exception to throw.
#[derive(Debug)]
pub struct Failure {
    kind: Kind,
    message: String,
    /// The file the failure is about, if known (`LooseleafException.location()`).
    location: Option<String>,
}

impl Failure {
    /// A failure with `message`, thrown as a `LooseleafException`.
    pub fn new(message: impl Into<String>) -> Self {
        Self { kind: Kind::Other, message: message.into(), location: None }
    }

    /// A bad argument of the connector's user (an option, a row range), thrown as a
    /// `LooseleafInvalidArgumentException`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self { kind: Kind::Core(ErrorKind::InvalidArgument), message: message.into(), location: None }
    }

    /// A wait given up because the task was killed or its thread interrupted.
    pub fn interrupted(message: impl Into<String>) -> Self {
        Self { kind: Kind::Interrupted, message: message.into(), location: None }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

impl From<looseleaf::Error> for Failure {
    fn from(e: looseleaf::Error) -> Self {
        Self { kind: Kind::Core(e.kind()), location: e.location().map(str::to_owned), message: e.to_string() }
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Self::new(format!("JNI: {e}"))
    }
}

/// Throws the exception of a failure or a panic (unless an exception is already pending,
/// which then propagates) and returns the default value.
pub struct ThrowLooseleafException;

/// Throws `failure` as its class, made with `(String message, String location)`; if that cannot
/// be done, as a `LooseleafException` with its message.
fn throw(env: &mut Env<'_>, failure: Failure) {
    if env.exception_check() {
        return;
    }
    let _ = throw_typed(env, &failure);
    if !env.exception_check() {
        // A failure to throw leaves the JVM's own pending error (e.g. NoClassDefFoundError).
        let _ = env.throw_new(BASE, JNIString::new(failure.message));
    }
}

fn throw_typed(env: &mut Env<'_>, failure: &Failure) -> jni::errors::Result<()> {
    let message = JObject::from(env.new_string(&failure.message)?);
    let location = match &failure.location {
        Some(location) => JObject::from(env.new_string(location)?),
        None => JObject::default(),
    };
    let args = [JValue::Object(&message), JValue::Object(&location)];
    let exception =
        env.new_object(class_of(failure.kind), jni_sig!("(Ljava/lang/String;Ljava/lang/String;)V"), &args)?;
    let throwable = env.cast_local::<JThrowable>(exception)?;
    env.throw(throwable)
}

impl<T: Default> ErrorPolicy<T, Failure> for ThrowLooseleafException {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _captures: &mut (),
        err: Failure,
    ) -> jni::errors::Result<T> {
        throw(env, err);
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
        throw(env, Failure::new(format!("internal error (a bug in looseleaf): {message}")));
        Ok(T::default())
    }
}

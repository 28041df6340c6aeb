//! The table behind the JVM's `long` handles.
//!
//! Every native object the JVM holds (an open file, a scan, a batch, a task's writer) is an
//! entry of one process-wide table; a handle is the entry's index and its generation, never an
//! address. Looking a handle up checks that the entry is live, that its generation is the
//! handle's (a handle of a removed entry whose slot was reused is refused) and that it holds an
//! object of the kind asked for, so a stale, closed, forged or wrong handle is an error the JVM
//! sees as an exception, never undefined behaviour.
//!
//! Entries are `Arc`s: a lookup clones one and releases the table's lock at once, so a scan
//! blocked in `next` holds no lock another thread needs (freeing a batch on Arrow's release
//! thread, closing a file). Removing an entry drops the table's reference; the object is freed
//! when the last lookup that still uses it returns. Objects used mutably are registered inside a
//! `Mutex` (see [`Registry::lock`]): two threads using one of them at once get an error, not a
//! wait.

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::policy::Failure;

/// A handle as the JVM holds it: bits 0-31 the slot's index plus one (0 is never a handle),
/// bits 32-62 its generation.
pub type Handle = i64;

struct Slot {
    generation: u32,
    object: Option<Entry>,
}

struct Entry {
    /// What kind of object it is, for errors ("a handle of a scan where a file was expected").
    kind: &'static str,
    object: Arc<dyn Any + Send + Sync>,
}

/// The table (see the module documentation).
pub struct Registry {
    /// Guarded by its own lock, held only to find, add or remove an entry.
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    slots: Vec<Slot>,
    /// Indices of empty slots, reused first.
    free: Vec<u32>,
}

/// The process's table.
pub fn registry() -> &'static Registry {
    static REGISTRY: Registry = Registry { slots: Mutex::new(Slots { slots: Vec::new(), free: Vec::new() }) };
    &REGISTRY
}

/// The short name of `T` for messages (`Scan`, not `looseleaf_jni::reading::Scan`).
fn kind_of<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    let name = name.rsplit_once("::").map_or(name, |(_, last)| last);
    name.trim_end_matches('>')
}

impl Registry {
    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `object` and returns its handle.
    pub fn insert<T: Send + Sync + 'static>(&self, object: T) -> Handle {
        let entry = Entry { kind: kind_of::<T>(), object: Arc::new(object) };
        let mut slots = self.slots();
        let index = match slots.free.pop() {
            Some(index) => index,
            None => {
                slots.slots.push(Slot { generation: 0, object: None });
                (slots.slots.len() - 1) as u32
            }
        };
        let slot = &mut slots.slots[index as usize];
        slot.object = Some(entry);
        encode(index, slot.generation)
    }

    /// The object of kind `T` behind `handle`.
    ///
    /// # Errors
    /// A [`Failure`] for a null, unknown, stale or removed handle, or one of another kind.
    pub fn get<T: Send + Sync + 'static>(&self, handle: Handle) -> Result<Arc<T>, Failure> {
        let (index, generation) = decode::<T>(handle)?;
        let slots = self.slots();
        let entry = live::<T>(&slots, index, generation, handle)?;
        let object = entry.object.clone();
        let kind = entry.kind;
        drop(slots);
        object.downcast::<T>().map_err(|_| wrong_kind::<T>(handle, kind))
    }

    /// Removes the object of kind `T` behind `handle` from the table and returns it; the handle
    /// is invalid from now on.
    ///
    /// # Errors
    /// As [`get`](Self::get); a handle of another kind is left in place.
    pub fn remove<T: Send + Sync + 'static>(&self, handle: Handle) -> Result<Arc<T>, Failure> {
        let (index, generation) = decode::<T>(handle)?;
        let mut slots = self.slots();
        let entry = live::<T>(&slots, index, generation, handle)?;
        if !entry.object.is::<T>() {
            return Err(wrong_kind::<T>(handle, entry.kind));
        }
        let Slots { slots: table, free } = &mut *slots;
        let slot = &mut table[index as usize];
        let entry = slot.object.take();
        // A generation that wraps around is one of 2^31: a handle that old is not kept by anyone.
        slot.generation = (slot.generation + 1) & GENERATION_MASK;
        free.push(index);
        drop(slots);
        entry
            .map(|e| e.object)
            .and_then(|object| object.downcast::<T>().ok())
            .ok_or_else(|| Failure::new(format!("looseleaf: handle {handle:#x} was removed meanwhile")))
    }

    /// Runs `f` on the object behind `handle`, registered as a `Mutex<T>`, locked: the object of
    /// one Java thread at a time (a second thread gets an error, not a wait).
    ///
    /// # Errors
    /// As [`get`](Self::get); a [`Failure`] if another thread is using the object.
    pub fn lock<T: Send + 'static, R>(&self, handle: Handle, f: impl FnOnce(&mut T) -> R) -> Result<R, Failure> {
        let object = self.get::<Mutex<T>>(handle)?;
        let mut guard = match object.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                return Err(Failure::new(format!(
                    "looseleaf: the {} of handle {handle:#x} is in use by another thread",
                    kind_of::<T>()
                )));
            }
        };
        Ok(f(&mut guard))
    }

    /// Live entries, for tests of leaks.
    pub fn len(&self) -> usize {
        self.slots().slots.iter().filter(|s| s.object.is_some()).count()
    }
}

const GENERATION_MASK: u32 = 0x7fff_ffff;

fn encode(index: u32, generation: u32) -> Handle {
    (((generation & GENERATION_MASK) as i64) << 32) | (index as i64 + 1)
}

fn decode<T>(handle: Handle) -> Result<(u32, u32), Failure> {
    let slot = handle & 0xffff_ffff;
    if handle <= 0 || slot == 0 {
        return Err(Failure::new(format!("looseleaf: {handle:#x} is not a handle of a {}", kind_of::<T>())));
    }
    Ok(((slot - 1) as u32, (handle >> 32) as u32))
}

fn live<T>(slots: &Slots, index: u32, generation: u32, handle: Handle) -> Result<&Entry, Failure> {
    match slots.slots.get(index as usize) {
        Some(Slot { generation: g, object: Some(entry) }) if *g == generation => Ok(entry),
        Some(_) => Err(Failure::new(format!(
            "looseleaf: handle {handle:#x} of a {} is closed (a stale handle, used after close or free)",
            kind_of::<T>()
        ))),
        None => Err(Failure::new(format!("looseleaf: {handle:#x} is not a handle of a {}", kind_of::<T>()))),
    }
}

fn wrong_kind<T>(handle: Handle, kind: &str) -> Failure {
    Failure::new(format!("looseleaf: handle {handle:#x} is a handle of a {kind}, not of a {}", kind_of::<T>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct File(u32);
    struct Scan;

    #[test]
    fn handles_are_checked_never_trusted() {
        let registry = Registry { slots: Mutex::new(Slots::default()) };
        let file = registry.insert(File(7));
        assert_eq!(registry.get::<File>(file).map(|f| f.0).ok(), Some(7));
        // Wrong kind, forged, null: errors.
        assert!(registry.get::<Scan>(file).err().is_some_and(|e| e.to_string().contains("of a File, not of a Scan")));
        assert!(registry.remove::<Scan>(file).is_err());
        assert!(registry.get::<File>(file + 1).is_err());
        assert!(registry.get::<File>(0).is_err());
        assert!(registry.get::<File>(-5).is_err());
        // Removed: the handle is stale, even once its slot holds another object.
        assert_eq!(registry.remove::<File>(file).map(|f| f.0).ok(), Some(7));
        assert!(registry.remove::<File>(file).err().is_some_and(|e| e.to_string().contains("is closed")));
        let again = registry.insert(File(8));
        assert_ne!(again, file);
        assert!(registry.get::<File>(file).is_err());
        assert_eq!(registry.get::<File>(again).map(|f| f.0).ok(), Some(8));
        assert_eq!(registry.len(), 1);
        // A locked object refuses a second user instead of waiting.
        let scan = registry.insert(Mutex::new(Scan));
        let nested = registry.lock::<Scan, _>(scan, |_| registry.lock::<Scan, _>(scan, |_| ()));
        assert!(nested.is_ok_and(|inner| inner.is_err()));
    }
}
